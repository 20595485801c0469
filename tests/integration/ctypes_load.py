#!/usr/bin/env python3
"""Load a library through Python's ctypes (dlopen, no LD_PRELOAD) and use it.

  ctypes_load.py tracer LIBLOCKTRACE   the tracer itself: it loads and reports itself active
  ctypes_load.py tensorlib LIBTENSORLIB tensorlib (built with the tracer linked in): it loads,
                                        copies a tensor (a read lock on its storage) and the
                                        tracer it brought along is loaded and active

Prints what it did on stdout; a load failure ("cannot allocate memory in static TLS block")
is an OSError, printed with status 1.
"""
import ctypes
import sys


def main(what, path):
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        print(f'load failed: {e}')
        return 1
    if what == 'tensorlib':
        lib.tl_ones.restype = ctypes.c_void_p
        lib.tl_ones.argtypes = [ctypes.POINTER(ctypes.c_size_t), ctypes.c_size_t, ctypes.c_int,
                                ctypes.c_int]
        lib.tl_copy.restype = ctypes.c_void_p
        lib.tl_copy.argtypes = [ctypes.c_void_p]
        lib.tl_elem_count.restype = ctypes.c_size_t
        lib.tl_elem_count.argtypes = [ctypes.c_void_p]
        lib.tl_release.argtypes = [ctypes.c_void_p]
        shape = (ctypes.c_size_t * 2)(3, 4)
        t = lib.tl_ones(shape, 2, 5, 0)  # TL_F32, TL_CPU
        c = lib.tl_copy(t) if t else None
        print(f'copy of {lib.tl_elem_count(c) if c else 0} elements')
        lib.tl_release(c)
        lib.tl_release(t)
    print(f'tracer active {lib.locktrace_active_impl()}')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1], sys.argv[2]))
