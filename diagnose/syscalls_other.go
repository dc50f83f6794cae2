//go:build !linux || !(amd64 || arm64)

package diagnose

// syscallNames is empty where lockctl has no table: calls show as
// "syscall N".
var syscallNames = map[int]string{}
