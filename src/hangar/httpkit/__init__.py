"""The HTTP edge every door shares, one layer above the kernel: what a route does with a request before and after
its own work. The kernel (``hangar.core``) knows no HTTP; the RPC layer and the parts' routes stand on this.

- ``requests``: request bodies read against a route's limit (413 past it, 408 when too slow), the bearer token of
  an ``Authorization`` header, and replaying a body already read.
- ``errors``: the one renderer of JSON error bodies, and the exception handlers the server app installs.
- ``ratelimit``: attempts per client address (token buckets, ``BUDGETS``) and the route decorators that spend them;
  the chat bridge's link codes spend the same buckets.
"""
