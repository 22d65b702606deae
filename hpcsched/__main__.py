import sys

from hpcsched.cli import main

sys.exit(main())
