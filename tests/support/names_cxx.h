/* C++ functions for test_function_names.c (names_cxx.cpp). */
#ifndef TL_TEST_NAMES_CXX_H
#define TL_TEST_NAMES_CXX_H

#ifdef __cplusplus
extern "C" {
#endif

/* The address of names::twice<int>, demangled "int names::twice<int>(int)". */
const void *names_cxx_template_address(void);

#ifdef __cplusplus
}
#endif

#endif
