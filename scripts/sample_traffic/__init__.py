"""Building blocks of scripts/gen_sample_traffic.py (standard library only)."""
