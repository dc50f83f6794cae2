"""The RQ job of the conformance driver (driver.py rq_job): RQ runs only
functions it can import by name, never __main__'s."""
import os

# The ends of a pipe from the driver: the job runs until a byte comes
# (release), and ends its work horse without finishing when the driver
# dies (EOF: a crash, the worker and its job gone at once).
release_fd = None
send_fd = None


def hold():
    """Runs in the worker's forked work horse until released."""
    os.close(send_fd)  # else the horse's own copy keeps EOF from coming
    if os.read(release_fd, 1) == b"":
        os._exit(1)
    return "done"
