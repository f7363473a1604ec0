"""TVM's ``tvm.contrib.pickle_memoize``: ``@memoize(key)`` caches what a function returns
for its arguments, as TVM's tests use it for their numpy references.

TVM kept the cache in a pickle file between runs; tecc keeps it in memory for the
process (no pickle files: a cache that loads code from disk is not worth its risk),
so a reference is computed once per test run.
"""
from __future__ import annotations

import functools

#: key -> {arguments -> result}
CACHES: dict = {}


def memoize(key, save_at_exit=False):
    """A decorator caching the results of a function under ``key``, by its arguments and
    the values its closure reads (TVM's tests memoize a closure of no arguments over the
    shapes of one case: each case has its own entry); unhashable ones are computed
    each time.  ``save_at_exit`` is TVM's and ignored: nothing is written."""
    del save_at_exit
    if not isinstance(key, str):
        raise TypeError(f"memoize: the key must be a string naming the cache, got {type(key).__name__}")

    def decorate(func):
        cache = CACHES.setdefault(f"{key}.{func.__name__}", {})
        closure = tuple(cell.cell_contents for cell in func.__closure__ or ())

        @functools.wraps(func)
        def memoized(*args):
            entry = (closure, args)
            try:
                return cache[entry]
            except KeyError:
                value = cache[entry] = func(*args)
                return value
            except TypeError:  # unhashable arguments or closure values: computed each time
                return func(*args)

        return memoized

    return decorate
