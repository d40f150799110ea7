"""Finding faces in a preview (``library.faces.finding``) with the real models: on faces
the tests draw (always), and on the shared samples' public-domain portrait, upright and
as a file turned by its EXIF orientation 6, made into previews as a crawl makes them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from safelight.library.faces import finding, models
from safelight.library.faces.descriptors import STORED_BYTES, unpack
from safelight.library.faces.finding import FoundFace, UnreadablePreview, find_faces
from safelight.library.faces.grouping import NO_FACES, THRESHOLD, Faces, Grouping, group
from safelight.library.render.images import make_image_proxies
from safelight.testing.faces import drawn_face, face_box, jpeg_of
from safelight.testing.samples import SAMPLES, needs_samples
from safelight.testing.specs import DEFAULT_SPEC


def centre_in(face: FoundFace, size: tuple[int, int], box: tuple[float, ...]) -> bool:
    width, height = size
    x = (face.box.left + face.box.right) / 2 * width
    y = (face.box.top + face.box.bottom) / 2 * height
    return box[0] <= x <= box[2] and box[1] <= y <= box[3]


@pytest.mark.parametrize(
    ("size", "at", "scale"),
    [
        ((640, 480), (320, 240), 0.75),
        ((1920, 1440), (1300, 500), 0.3),
        ((480, 640), (240, 320), 0.6),
    ],
    ids=["middle", "small-in-a-large-preview", "portrait"],
)
def test_a_drawn_face_is_found_where_it_is(
    size: tuple[int, int], at: tuple[int, int], scale: float
) -> None:
    (face,) = find_faces(jpeg_of(drawn_face(size, at=at, scale=scale)))
    assert 0 <= face.box.left < face.box.right <= 1 and 0 <= face.box.top < face.box.bottom <= 1
    assert centre_in(face, size, face_box(at, scale))
    assert len(face.descriptor) == STORED_BYTES


def test_a_face_on_its_side_is_not_found_so_the_preview_must_be_upright() -> None:
    """The frontal detector finds upright faces only: why faces are found on the
    preview, which the crawl has turned by the photo's orientation, never the original."""
    upright = drawn_face()
    assert len(find_faces(jpeg_of(upright))) == 1
    assert find_faces(jpeg_of(upright.rotate(90, expand=True))) == ()


def test_a_picture_without_a_face_has_none() -> None:
    assert find_faces(jpeg_of(Image.new("RGB", (640, 480), (90, 110, 140)))) == ()


def test_two_photos_of_one_face_are_one_person() -> None:
    a = find_faces(jpeg_of(drawn_face((640, 480), at=(200, 240), scale=0.7)))
    b = find_faces(jpeg_of(drawn_face((1024, 768), at=(700, 400), scale=1.0)))
    vectors = unpack([a[0].descriptor, b[0].descriptor])
    assert float(np.linalg.norm(vectors[0] - vectors[1])) < THRESHOLD
    assert group(NO_FACES, Faces([1, 2], vectors), frozenset({1, 2})) == Grouping({}, [[1, 2]])


def test_faces_are_listed_top_to_bottom_then_left_to_right() -> None:
    picture = drawn_face((1280, 480), at=(900, 250), scale=0.6)
    picture.paste(drawn_face((400, 400), at=(200, 200), scale=0.6), (0, 0))
    found = find_faces(jpeg_of(picture))
    assert len(found) == 2
    assert [f.box.top for f in found] == sorted(f.box.top for f in found)


def test_what_is_no_preview_is_an_unreadable_preview() -> None:
    with pytest.raises(UnreadablePreview, match="cannot be decoded"):
        find_faces(b"not a picture at all")
    with pytest.raises(UnreadablePreview, match="larger than a preview can be"):
        find_faces(jpeg_of(Image.new("RGB", (finding.MAX_SIDE + 1, 8))))


def test_the_models_load_once_per_process() -> None:
    assert models.models() is models.models()


def test_without_the_models_one_line_names_the_setup_command(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert models.missing() is None
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    assert models.missing() == (
        "dlib and face_recognition_models not installed: "
        "`SAFELIGHT_FACES=1 scripts/setup` installs them"
    )


# --- the samples' portrait -----------------------------------------------------------


def portrait_faces() -> list[tuple[FoundFace, ...]]:
    assert SAMPLES is not None
    folder = SAMPLES / "immich-test-assets" / "metadata" / "faces"
    names = ["portrait.jpg", "portrait-orientation-6.jpg"]
    if not all((folder / n).is_file() for n in names):
        pytest.skip("the samples have no portraits (immich-test-assets/metadata/faces)")
    previews = [make_image_proxies(Path(folder / n), DEFAULT_SPEC).preview.data for n in names]
    return [find_faces(p) for p in previews]


@pytest.mark.samples
@needs_samples
def test_the_portrait_and_its_turned_copy_are_one_person_right_side_up() -> None:
    upright, turned = portrait_faces()
    assert len(upright) == len(turned) == 1
    # The file of orientation 6 holds the picture on its side; its preview is upright, so
    # its face is where the upright file's is.
    a, b = upright[0].box, turned[0].box
    assert max(abs(a.left - b.left), abs(a.top - b.top), abs(a.right - b.right)) < 0.02
    assert a.bottom - a.top == pytest.approx((a.right - a.left) * 840 / 700, rel=0.05)
    vectors = unpack([upright[0].descriptor, turned[0].descriptor])
    assert group(NO_FACES, Faces([1, 2], vectors), frozenset({1, 2})) == Grouping({}, [[1, 2]])


@pytest.mark.samples
@needs_samples
def test_the_portrait_and_a_drawn_face_are_two_people() -> None:
    (portrait,), _ = portrait_faces()
    (drawn,) = find_faces(jpeg_of(drawn_face()))
    placed = Faces([1], unpack([portrait.descriptor]), [10])
    assert group(placed, Faces([2], unpack([drawn.descriptor])), frozenset({2})) == Grouping()
