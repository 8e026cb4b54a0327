"""``python -m judgegym ...`` is the ``judgegym`` command; under torchrun:
``torchrun --nproc-per-node N -m judgegym train ...``."""

from .cli import main

if __name__ == "__main__":
    main()
