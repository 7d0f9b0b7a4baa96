"""Infrastructure shared by the services: the event envelope, its codec, Redis keys, stores.

Unlike ``shared.core`` this package does I/O; the rules core never imports it.
"""
