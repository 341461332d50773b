/* Functions built with -finstrument-functions (instrumented_calls.c). */
#ifndef TL_TEST_INSTRUMENTED_CALLS_H
#define TL_TEST_INSTRUMENTED_CALLS_H

extern _Atomic int instrumented_sink;

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
/* fork() inside an instrumented call: returns in the parent and the child */
int instrumented_fork(void);
/* threads threads, each calling instrumented_caller `calls` times, joined */
void instrumented_threads(int threads, int calls);
/* threads (at most 8) that call instrumented_caller until
 * instrumented_busy_stop, which joins them; the calls they made */
void instrumented_busy_start(int threads);
unsigned long instrumented_busy_stop(void);
/* a thread calling instrumented_caller `calls` times while this one sends
 * it `signals` SIGUSR1s, whose instrumented handler calls instrumented_leaf;
 * returns the signals its handler took */
unsigned long instrumented_signal_storm(int calls, int signals);
/* called by no test but the systrace one: its name is not resolved before */
void instrumented_first_under_systrace(void);
/* called by no test but the one of patterns on a function's first call */
void instrumented_pattern_included(void);
void instrumented_pattern_excluded(void);

/* calls fn two C calls deep (C built without -fexceptions) */
void instrumented_c_through(void (*fn)(void));
/* (instrumented_throw.cpp) throws 7 through instrumented_c_through from a
 * C++ function and catches it; returns what it caught */
int instrumented_exception_through_c(void);

#endif
