"""A crash in compiled code ends with its Python stack and a line naming `spaceship-sim clear-cache`.

faulthandler prints the stack of every thread on SIGSEGV, SIGBUS, SIGILL or SIGFPE, then re-raises
the signal to the handler that was there before it: `install()` puts a compiled handler there that
writes CLEAR_HINT and restores the default action, so the process still dies of the signal (exit
139 for SIGSEGV). The handler is machine code (a numba cfunc calling write(2) by symbol): a Python
handler cannot run in a crashed process, where another thread may hold the interpreter.
"""
from __future__ import annotations

import ctypes
import faulthandler
import signal
import sys

import numpy as np
from numba import cfunc, types

from .kernel_cache import CLEAR_HINT

FATAL = ("SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE")
_write = types.ExternalFunction("write", types.intp(types.int32, types.uintp, types.uintp))
_signal = types.ExternalFunction("signal", types.uintp(types.int32, types.uintp))
_MESSAGE = np.frombuffer(f"\n{CLEAR_HINT}\n".encode(), np.uint8)


@cfunc(types.void(types.int32), cache=True)
def _hint(signum):
    _write(2, _MESSAGE.ctypes.data, _MESSAGE.size)  # stderr; write(2) is async-signal-safe
    _signal(signum, 0)  # SIG_DFL: the instruction that faulted runs again and ends the process


def install() -> None:
    """faulthandler on (to the process's own stderr), with the hint chained after its stack dump
    (see the module docstring); where libc's signal() cannot be reached, faulthandler alone."""
    faulthandler.disable()  # it must save our handler as the one to chain to
    try:
        set_handler = ctypes.CDLL(None)["signal"]
    except (OSError, AttributeError, TypeError):
        set_handler = None
    if set_handler is not None:
        set_handler.argtypes, set_handler.restype = (ctypes.c_int, ctypes.c_void_p), ctypes.c_void_p
        for name in FATAL:
            if hasattr(signal, name):
                set_handler(getattr(signal, name), _hint.address)
    if sys.__stderr__ is not None:
        faulthandler.enable(file=sys.__stderr__, all_threads=True)
