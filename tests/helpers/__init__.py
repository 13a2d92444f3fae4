"""What the tests share besides fixtures: the repository's paths, the pairs the tiny
models memorise, and what a CPU can hold CTranslate2's int8 to. Fixtures live in
`tests/conftest.py`; models and runs in `memorised.py`, training runs in `training.py`,
running the command itself in `cli.py`, a server in `server.py`, waiting for an event
(never for a fixed time) in `waiting.py`."""

from __future__ import annotations

import signal
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent.parent
TINY_CONFIG = ROOT / "configs" / "tiny.yaml"

# CTranslate2's int8 products on x86 CPUs without AVX512 (oneDNN's AVX2 kernels) are
# noisier than torch's (docs/INFERENCE.md has the figures): the tests hold CTranslate2's
# int8 to exact agreement with float32 only where AVX512 is present.
CT2_INT8_EXACT = torch.backends.cpu.get_cpu_capability() == "AVX512"


def write_output(path: Path, text: str) -> None:
    """Write `text` as transcli writes an output file (so transcli may replace it)."""
    from transcli.system.outputs import output_file

    with output_file(path) as handle:
        handle.write(text.encode("utf-8"))


def default_signals() -> None:
    """For a child that gets stop signals (`preexec_fn`, or before `exec`): a test runner
    started in the background (`make test &`, `nohup`) ignores SIGINT or SIGHUP, a child
    would inherit that, and transcli keeps ignored signals ignored, as a shell asks."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_DFL)


# A few pairs written for the tests (the shipped corpus lives in data/sample).
PAIRS = [
    ("I like trees.", "Me gustan los árboles."),
    ("Where is the station?", "¿Dónde está la estación?"),
    ("What a beautiful day!", "¡Qué día tan bonito!"),
    ("The boy eats an apple.", "El niño come una manzana."),
    ("We live in a small town.", "Vivimos en un pueblo pequeño."),
    ("My sister has two cats.", "Mi hermana tiene dos gatos."),
    ("It is raining in the mountains.", "Está lloviendo en las montañas."),
    ("Tomorrow we will go to the beach.", "Mañana iremos a la playa."),
    ("Do you want some coffee?", "¿Quieres un poco de café?"),
    ("The teacher opened the window.", "La profesora abrió la ventana."),
    ("They are reading a long book.", "Están leyendo un libro largo."),
    ("I don't understand the question.", "No entiendo la pregunta."),
    ("The shop closes at eight.", "La tienda cierra a las ocho."),
    ("Our grandmother makes bread on Sundays.", "Nuestra abuela hace pan los domingos."),
    ("Please speak more slowly.", "Por favor, habla más despacio."),
    ("The dog sleeps under the table.", "El perro duerme debajo de la mesa."),
]

# Where a span goes in the pairs the slot model memorises (conftest's `slot_spm`,
# test_realtext's `slot_model`): {0} and {1} become the first two placeholders
# (`realtext.placeholder_pool`) of the vocabulary, whose text has them as `SLOT_NUMBERS`.
SLOTS = [("Visit {0} today.", "Visita {0} hoy."),
         ("Write to {0} and {1} now.", "Escribe a {0} y {1} ahora."),
         ("{0} is here.", "{0} está aquí.")]
SLOT_NUMBERS = ("701", "702")

# Pairs whose characters data/sample never has (Greek, Chinese, emoji with a variation
# selector): with byte fallback they are spelt as byte pieces, and a model memorising
# them must give them back character for character.
BYTE_PAIRS = [
    ('The word "λόγος" means reason.', 'La palabra "λόγος" significa razón.'),
    ("Tokyo is called 東京 in Japanese.", "Tokio se llama 東京 en japonés."),
    ("I love this 😀 so much ❤️.", "Me encanta tanto esto 😀 ❤️."),
]
