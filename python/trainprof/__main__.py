"""`python -m trainprof ARGS` is the `trainprof` command."""

from trainprof._cli import main

main()
