"""specterm: does speculative decoding pay on your workload, and with which draft length?"""

__version__ = "0.1.0"
