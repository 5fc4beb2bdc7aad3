import sys

from scripts.tools.kafka_mirror_maker.command import main

sys.exit(main())
