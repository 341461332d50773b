/*
 * A program linked with the library that tests/test_secure_environment.c
 * installs set-uid root and runs as another user: it starts the library
 * with no options, so that every setting could come only from the
 * environment, records one event, and prints whether the kernel marked it
 * secure (AT_SECURE) and which recorder ran.
 */
#include <stdio.h>
#include <sys/auxv.h>

#include <timeline/trace_event.h>

int main(void)
{
	int rc = tl_init(NULL);
	if (rc == 0) {
		TRACE_EVENT_INSTANT0("test", "secure child", TL_EVENT_SCOPE_THREAD);
		tl_flush();
	}
	printf("secure=%d init=%d recorder=%s\n", (int)getauxval(AT_SECURE), rc,
	       rc == 0 ? tl_recorder_name() : "none");
	tl_shutdown();
	return 0;
}
