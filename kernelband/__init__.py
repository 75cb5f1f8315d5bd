"""kernelband: the command-line front of kbsim (core), live (GPU loop) and analysis."""

__version__ = "0.1.0"
