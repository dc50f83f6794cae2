package diagnose

import "syscall"

// syscallNames name the calls a stuck thread is commonly found in, by
// number on linux/arm64 (the syscall package's table; arm64 has no poll,
// select, epoll_wait, open or pause, only their newer forms).
var syscallNames = map[int]string{
	syscall.SYS_READ: "read", syscall.SYS_READV: "readv", syscall.SYS_PREAD64: "pread64", syscall.SYS_PREADV: "preadv",
	syscall.SYS_RECVFROM: "recvfrom", syscall.SYS_RECVMSG: "recvmsg", syscall.SYS_RECVMMSG: "recvmmsg",
	syscall.SYS_WRITE: "write", syscall.SYS_WRITEV: "writev", syscall.SYS_PWRITE64: "pwrite64",
	syscall.SYS_SENDTO: "sendto", syscall.SYS_SENDMSG: "sendmsg", syscall.SYS_SENDMMSG: "sendmmsg",
	syscall.SYS_CONNECT: "connect", syscall.SYS_ACCEPT: "accept", syscall.SYS_ACCEPT4: "accept4",
	syscall.SYS_FSYNC: "fsync", syscall.SYS_FDATASYNC: "fdatasync", syscall.SYS_FLOCK: "flock",
	syscall.SYS_PPOLL: "ppoll", syscall.SYS_PSELECT6: "pselect6", syscall.SYS_EPOLL_PWAIT: "epoll_pwait", 441: "epoll_pwait2",
	syscall.SYS_FUTEX: "futex", syscall.SYS_NANOSLEEP: "nanosleep", syscall.SYS_CLOCK_NANOSLEEP: "clock_nanosleep",
	syscall.SYS_WAIT4: "wait4", syscall.SYS_WAITID: "waitid",
	syscall.SYS_RT_SIGSUSPEND: "rt_sigsuspend", syscall.SYS_RT_SIGTIMEDWAIT: "rt_sigtimedwait",
	syscall.SYS_OPENAT: "openat", syscall.SYS_IOCTL: "ioctl", syscall.SYS_FCNTL: "fcntl",
}
