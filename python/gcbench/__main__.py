import sys

try:  # Ctrl-C while the command line is still loading: the same one line as later
    from .cli import main
except KeyboardInterrupt:
    print("\ngcbench: interrupted", file=sys.stderr)
    sys.exit(130)

sys.exit(main())
