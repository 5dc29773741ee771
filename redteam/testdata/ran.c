/* A static program: no loader, so a workspace's libraries cannot act on it. */
#include <stdio.h>

int main(void) {
	puts("ran");
	return 0;
}
