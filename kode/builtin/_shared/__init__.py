"""The plumbing several built-in folders share: the only place any of them may import of another.

The workspace's paths, checks and safe writes (the file tools, memory and images write as
one), the addresses that may be reached and the web settings (the web tools and the browser),
and how a command is checked, started, tracked and killed (``bash_run`` and ``code_run``). It
imports nothing of the tool folders, and loads nothing of its own: each module is imported by
what needs it.
"""
