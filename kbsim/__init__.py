"""kbsim: the core of kernelband.

Bandit policies (a readable reference and the numba kernels that live and replay both run), the
replay engine and its environments, and the trace schema and I/O. Depends on neither `live` nor
`analysis`.
"""

from kbsim._numba_cache import configure_numba_cache

__version__ = "0.1.0"

configure_numba_cache()
