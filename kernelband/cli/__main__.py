"""`python -m kernelband.cli`: the same as the `kernelband` console script."""

from kernelband.cli import main

if __name__ == "__main__":
    main()
