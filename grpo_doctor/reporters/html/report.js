(function () {
  var tip = document.getElementById('tip');
  function nearest(a, v) {
    var lo = 0, hi = a.length - 1;
    while (hi - lo > 1) { var mid = (lo + hi) >> 1; if (a[mid] < v) lo = mid; else hi = mid; }
    return Math.abs(a[lo] - v) <= Math.abs(a[hi] - v) ? lo : hi;
  }
  function show(v, pct) {
    if (pct) return (v * 100).toFixed(1) + '%';
    var a = Math.abs(v);
    return (a !== 0 && (a < 1e-3 || a >= 1e5)) ? v.toExponential(2) : String(+v.toPrecision(4));
  }
  var charts = document.querySelectorAll('svg.chart');
  for (var c = 0; c < charts.length; c++) {
    (function (svg) {
      var data = JSON.parse(document.getElementById(svg.getAttribute('data-src')).textContent);
      var hits = svg.querySelectorAll('rect.hit');
      for (var h = 0; h < hits.length; h++) {
        (function (rect) {
          var p = data[+rect.getAttribute('data-panel')];
          var hair = rect.parentNode.querySelector('line.hair');
          rect.addEventListener('mousemove', function (ev) {
            if (!p || !p.steps.length) return;
            var pt = svg.createSVGPoint(); pt.x = ev.clientX; pt.y = ev.clientY;
            var loc = pt.matrixTransform(svg.getScreenCTM().inverse());
            var step = p.s0 + (loc.x - p.x0) / ((p.x1 - p.x0) || 1) * (p.s1 - p.s0);
            var i = nearest(p.steps, step);
            var x = p.x0 + (p.steps[i] - p.s0) / ((p.s1 - p.s0) || 1) * (p.x1 - p.x0);
            hair.setAttribute('x1', x); hair.setAttribute('x2', x);
            hair.setAttribute('visibility', 'visible');
            var text = 'step ' + p.steps[i].toLocaleString('en-US') + ' \u00b7 ' + p.name + ' ';
            text += p.smoothOnly ? show(p.smooth[i], p.pct)
              : show(p.raw[i], p.pct) + ' (median ' + show(p.smooth[i], p.pct) + ')';
            tip.textContent = text;
            tip.hidden = false;
            tip.style.left = (ev.clientX + 14) + 'px';
            tip.style.top = (ev.clientY + 14) + 'px';
          });
          rect.addEventListener('mouseleave', function () {
            tip.hidden = true; hair.setAttribute('visibility', 'hidden');
          });
        })(hits[h]);
      }
    })(charts[c]);
  }
  document.body.setAttribute('data-ready', '1');
})();
