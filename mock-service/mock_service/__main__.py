"""Entry point: `mock-service [flags]` or `python3 -m mock_service [flags]`."""
import sys

from . import config, server


def main(argv=None) -> int:
    settings = config.parse_or_exit(argv)
    try:
        return server.run(settings)
    except config.ConfigError as e:
        print(f"mock-service: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
