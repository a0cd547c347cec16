"""What kode trusts, in one place.

How kode starts the processes it runs itself, which executables it runs, and which paths of a
workspace the sandbox never lets a command write (see "What kode trusts" in
docs/architecture.md). It is the bottom layer: it imports nothing else of kode, and its
submodules are imported directly.
"""
