/*
 * no_dw.c - a libdw.so.1 without libdw's functions: found first on LD_LIBRARY_PATH, it loads,
 * and the tracer finds none of the functions it binds, as where libdw is not installed.
 */
int locktrace_no_dw;
