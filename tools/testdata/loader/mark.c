/* A library a hostile workspace ships: loaded into a process, its
   constructor appends that process's image (/proc/self/exe) to MARKER. */
#include <fcntl.h>
#include <unistd.h>

__attribute__((constructor)) static void mark(void) {
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n < 0)
		n = 0;
	exe[n] = '\n';
	int fd = open(MARKER, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd >= 0) {
		(void)write(fd, exe, n + 1);
		close(fd);
	}
}
