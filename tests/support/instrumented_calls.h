/* Functions built with -finstrument-functions (instrumented_calls.c). */
#ifndef TL_TEST_INSTRUMENTED_CALLS_H
#define TL_TEST_INSTRUMENTED_CALLS_H

extern volatile int instrumented_sink;

void instrumented_leaf(void);
void instrumented_caller(void); /* calls instrumented_leaf twice */
void instrumented_recurse(int n); /* n + 1 nested calls */
void instrumented_spin_ns(long ns);
/* setjmp, then depth + 1 nested calls that longjmp out, then a leaf */
void instrumented_longjmp(int depth);
/* a thread whose body calls pthread_exit two calls deep */
void instrumented_thread_exit(void);
void instrumented_callback(void);
/* raises SIGUSR1, whose (instrumented) handler calls instrumented_leaf */
void instrumented_raise(void);

#endif
