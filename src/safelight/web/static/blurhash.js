// A BlurHash decoder (https://blurha.sh's format), written for safelight: a hash of
// base-83 digits holds the size of a grid of cosine components, the largest AC value,
// the average colour (DC) and each AC component; the picture is their sum at each pixel.
// safelightBlurhash.paint(canvas, hash) fills a canvas, whose CSS stretches it.
"use strict";
(function () {
  const DIGITS =
    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz#$%*+,-.:;=?@[]^_{|}~";

  function decode83(text) {
    let value = 0;
    for (const character of text) {
      const digit = DIGITS.indexOf(character);
      if (digit < 0) throw new Error("not a BlurHash digit: " + character);
      value = value * 83 + digit;
    }
    return value;
  }

  function toLinear(channel) {
    const v = channel / 255;
    return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4);
  }

  function toSrgb(linear) {
    const v = Math.max(0, Math.min(1, linear));
    const srgb = v <= 0.0031308 ? v * 12.92 : 1.055 * Math.pow(v, 1 / 2.4) - 0.055;
    return Math.round(srgb * 255);
  }

  function signedSquare(v) {
    return Math.sign(v) * v * v;
  }

  // The pixels (RGBA, width x height) of a hash; throws on a malformed one.
  function decode(hash, width, height) {
    if (typeof hash !== "string" || hash.length < 6) throw new Error("BlurHash too short");
    const size = decode83(hash[0]);
    const columns = (size % 9) + 1;
    const rows = Math.floor(size / 9) + 1;
    if (hash.length !== 4 + 2 * columns * rows) throw new Error("BlurHash length mismatch");
    const largest = (decode83(hash[1]) + 1) / 166;
    const colours = [];
    const dc = decode83(hash.slice(2, 6));
    colours.push([toLinear(dc >> 16), toLinear((dc >> 8) & 255), toLinear(dc & 255)]);
    for (let n = 1; n < columns * rows; n++) {
      const ac = decode83(hash.slice(4 + n * 2, 6 + n * 2));
      colours.push([
        signedSquare((Math.floor(ac / 361) - 9) / 9) * largest,
        signedSquare(((Math.floor(ac / 19) % 19) - 9) / 9) * largest,
        signedSquare(((ac % 19) - 9) / 9) * largest,
      ]);
    }
    const pixels = new Uint8ClampedArray(width * height * 4);
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        let r = 0, g = 0, b = 0;
        for (let j = 0; j < rows; j++) {
          const vertical = Math.cos((Math.PI * y * j) / height);
          for (let i = 0; i < columns; i++) {
            const basis = Math.cos((Math.PI * x * i) / width) * vertical;
            const colour = colours[i + j * columns];
            r += colour[0] * basis;
            g += colour[1] * basis;
            b += colour[2] * basis;
          }
        }
        const at = 4 * (x + y * width);
        pixels[at] = toSrgb(r);
        pixels[at + 1] = toSrgb(g);
        pixels[at + 2] = toSrgb(b);
        pixels[at + 3] = 255;
      }
    }
    return pixels;
  }

  function paint(canvas, hash) {
    try {
      const pixels = decode(hash, canvas.width, canvas.height);
      const context = canvas.getContext("2d");
      const image = context.createImageData(canvas.width, canvas.height);
      image.data.set(pixels);
      context.putImageData(image, 0, 0);
      return true;
    } catch (error) {
      return false; // a malformed hash leaves the plain placeholder
    }
  }

  window.safelightBlurhash = { decode: decode, paint: paint };
})();
