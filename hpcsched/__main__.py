import sys

from hpcsched.cli.main import main

sys.exit(main())
