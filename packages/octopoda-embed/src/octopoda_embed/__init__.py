"""octopoda-embed: the ``[ai]`` extra of octopoda-core.

all-MiniLM-L6-v2 sentence embeddings (384 dimensions) on ONNX Runtime, with the model inside
this package: no torch, no model hub, nothing downloaded at run time.

>>> from octopoda_embed import MiniLM
>>> MiniLM().embed(["what does the user eat?"])[0][:2]  # doctest: +SKIP
[0.03..., -0.05...]
"""

from ._minilm import MiniLM, model_dir
from ._wordpiece import WordPiece

__all__ = ["MiniLM", "WordPiece", "model_dir"]
__version__ = "0.1.0"
