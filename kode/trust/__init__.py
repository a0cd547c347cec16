"""What kode trusts: the programs it runs itself, how it starts them, what the sandbox may write.

The bottom layer of kode: every other layer may import it, and it imports nothing of kode. Its
modules are imported one by one (``from kode.trust.processes import open_helper``); this package
re-exports nothing. `kode.trust.executables` finds each helper program once, from trusted places
only; `kode.trust.processes` starts every process kode runs for itself (an isolated Python, a
working directory and an environment kode chooses); `kode.trust.sandbox` is the OS sandbox of
commands (its system-call filter in `kode.trust.seccomp`), `kode.trust.confine` the read-only one
of helpers, and `kode.trust.protected` names the workspace paths the sandbox never lets a command
write. See the section "What kode trusts" of docs/architecture.md.
"""
