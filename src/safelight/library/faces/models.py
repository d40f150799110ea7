"""The models that find and describe faces, all shipped inside packages (nothing is
downloaded): dlib's HOG frontal face detector, compiled into ``dlib-bin``, and, from
``face-recognition-models``, the 5-point landmark model and the ResNet descriptor model
(docs/faces.md names each licence; the 68-point model of that package, trained on iBUG
300-W whose terms exclude commercial use, is never loaded).

Loaded by path, once per process, on first use: ``face_recognition_models``' own
``__init__`` imports ``pkg_resources`` (deprecated, and a warning), so its folder is
found without importing it.
"""

from __future__ import annotations

import importlib.util
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MODEL_PACKAGE = "face_recognition_models"
LANDMARKS_FILE = "shape_predictor_5_face_landmarks.dat"
DESCRIPTOR_FILE = "dlib_face_recognition_resnet_model_v1.dat"
SETUP_COMMAND = "SAFELIGHT_FACES=1 scripts/setup"
"""What installs dlib and the models (``requirements/faces.lock``)."""


def missing() -> str | None:
    """What finding faces needs and this Python lacks, as one line; None when all is
    there. Looks only (``find_spec``): imports nothing."""
    absent = [name for name in ("dlib", MODEL_PACKAGE) if importlib.util.find_spec(name) is None]
    if not absent:
        folder = model_folder()
        absent = [
            name for name in (LANDMARKS_FILE, DESCRIPTOR_FILE) if not (folder / name).is_file()
        ]
    if not absent:
        return None
    return f"{' and '.join(absent)} not installed: `{SETUP_COMMAND}` installs them"


def model_folder() -> Path:
    """The ``models`` folder of ``face_recognition_models``, found without importing it."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"{MODEL_PACKAGE} is not installed: `{SETUP_COMMAND}`")
    return Path(next(iter(spec.submodule_search_locations))) / "models"


@dataclass(frozen=True, slots=True)
class Models:
    detector: Any
    """``dlib.fhog_object_detector``: the HOG frontal face detector."""
    landmarks: Any
    """``dlib.shape_predictor``: the 5 points (eye corners, nose) a face is aligned by."""
    descriptor: Any
    """``dlib.face_recognition_model_v1``: the aligned face's 128-D descriptor."""


_loaded: Models | None = None
_lock = threading.Lock()


def models() -> Models:
    """The models, loaded on the first call in this process (about half a second and
    some 50 MB) and kept for the next."""
    global _loaded
    with _lock:
        if _loaded is None:
            import dlib  # type: ignore[import-untyped]  # opt-in: loaded only where faces are looked for

            folder = model_folder()
            _loaded = Models(
                dlib.get_frontal_face_detector(),
                dlib.shape_predictor(str(folder / LANDMARKS_FILE)),
                dlib.face_recognition_model_v1(str(folder / DESCRIPTOR_FILE)),
            )
        return _loaded
