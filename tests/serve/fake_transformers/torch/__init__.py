"""Fake torch for serve_bench_peer.sh's rehearsal (README.md): what its model step calls."""
__version__ = "0.0-fake"
bfloat16 = "bfloat16"
_seed = [0]


def manual_seed(seed):
    _seed[0] = seed
