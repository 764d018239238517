"""Comparisons across engines: the cross-stack check, the positions two engines share, llama.cpp's speculative logs."""
