// Runs inside headless Chromium on a page of inline SVG pictures (check_pictures.py builds it)
// and writes what it found, as JSON, into <pre id="result">. Every check reads the layout the
// browser computed, with the fonts it really used:
//   - no two text elements overlap (each text's box is its getBBox() mapped by its transform,
//     so rotated labels are compared as the rotated rectangles they are, not as their bounds);
//   - no text leaves the canvas (the SVG's viewBox);
//   - the legend explains every mark: each element drawn with data-mark="K" outside a legend
//     has a legend entry data-for="K", and each legend entry's K is drawn somewhere.
// Glyph boxes include the font's line gap; boxes that merely touch are not an overlap.
const kTolerance = 1.0;

function corners(el) {
  const b = el.getBBox();
  const m = el.getCTM();
  const pts = [[b.x, b.y], [b.x + b.width, b.y], [b.x + b.width, b.y + b.height],
               [b.x, b.y + b.height]];
  return pts.map(([x, y]) => [m.a * x + m.c * y + m.e, m.b * x + m.d * y + m.f]);
}

// How deep two convex quadrilaterals overlap along their least-overlapping axis (separating
// axis theorem): <= 0 when they are apart.
function overlapDepth(p, q) {
  let depth = Infinity;
  for (const poly of [p, q]) {
    for (let i = 0; i < poly.length; ++i) {
      const [x1, y1] = poly[i];
      const [x2, y2] = poly[(i + 1) % poly.length];
      let nx = y1 - y2, ny = x2 - x1;
      const len = Math.hypot(nx, ny);
      if (len === 0) continue;
      nx /= len;
      ny /= len;
      const proj = (pts) => pts.map(([x, y]) => x * nx + y * ny);
      const a = proj(p), b = proj(q);
      const d = Math.min(Math.max(...a) - Math.min(...b), Math.max(...b) - Math.min(...a));
      depth = Math.min(depth, d);
    }
  }
  return depth;
}

// A text's words, without its <title> (a tooltip, never drawn).
function words(el) {
  return [...el.childNodes].filter((n) => n.nodeName !== 'title')
      .map((n) => n.textContent).join('').trim();
}

function visible(el) {
  if (!words(el)) return false;
  const style = getComputedStyle(el);
  return style.display !== 'none' && style.visibility !== 'hidden';
}

function checkSvg(svg) {
  const problems = [];
  const vb = svg.viewBox.baseVal;
  const width = vb && vb.width ? vb.width : svg.width.baseVal.value;
  const height = vb && vb.height ? vb.height : svg.height.baseVal.value;
  const texts = [...svg.querySelectorAll('text')].filter(visible).map((el) => ({
    text: words(el).slice(0, 60),
    box: corners(el),
  }));
  for (const t of texts) {
    const out = t.box.some(([x, y]) => x < -kTolerance || y < -kTolerance ||
                                       x > width + kTolerance || y > height + kTolerance);
    if (out) problems.push(`text leaves the ${width}x${height} canvas: "${t.text}"`);
  }
  for (let i = 0; i < texts.length; ++i) {
    for (let j = i + 1; j < texts.length; ++j) {
      const d = overlapDepth(texts[i].box, texts[j].box);
      if (d > kTolerance) {
        problems.push(`texts overlap by ${d.toFixed(1)} px: "${texts[i].text}" and "${
            texts[j].text}"`);
      }
    }
  }
  const legend = new Set();
  for (const e of svg.querySelectorAll('[data-for]')) legend.add(e.getAttribute('data-for'));
  const drawn = new Set();
  for (const e of svg.querySelectorAll('[data-mark]')) {
    if (!e.closest('.legend')) drawn.add(e.getAttribute('data-mark'));
  }
  for (const k of drawn) {
    if (!legend.has(k)) problems.push(`mark "${k}" is drawn but the legend does not explain it`);
  }
  for (const k of legend) {
    if (!drawn.has(k)) problems.push(`legend entry "${k}" names a mark the picture does not draw`);
  }
  return {texts: texts.length, marks: drawn.size, problems};
}

function writeResult() {
  const result = {};
  for (const holder of document.querySelectorAll('div[data-picture]')) {
    const svg = holder.querySelector('svg');
    result[holder.getAttribute('data-picture')] =
        svg ? checkSvg(svg) : {texts: 0, marks: 0, problems: ['no <svg> element']};
  }
  document.getElementById('result').textContent = JSON.stringify(result);
}

writeResult();
