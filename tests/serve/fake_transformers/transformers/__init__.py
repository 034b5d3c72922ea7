"""Fake transformers for serve_bench_peer.sh's rehearsal (README.md): a config, a model
whose save_pretrained writes config.json and generation_config.json."""
import json
import os

__version__ = "0.0-fake"


class Qwen3Config:
    def __init__(self, **kwargs):
        self.values = dict(kwargs, model_type="qwen3")


class GenerationConfig:
    def __init__(self, eos_token_id=None):
        self.eos_token_id = eos_token_id


class _Model:
    def __init__(self, config):
        self.config = config
        self.generation_config = GenerationConfig(config.values.get("eos_token_id"))

    def save_pretrained(self, path):
        os.makedirs(path, exist_ok=True)
        with open(os.path.join(path, "config.json"), "w") as f:
            json.dump(self.config.values, f)
        with open(os.path.join(path, "generation_config.json"), "w") as f:
            json.dump({"eos_token_id": self.generation_config.eos_token_id}, f)


class AutoModelForCausalLM:
    @staticmethod
    def from_config(config, dtype=None):
        assert dtype is not None
        return _Model(config)
