"""Write the estimate's shipped coefficients for one architecture family (tensorforge/estimate/
shipped.py) from a fitted calibration (`rescore.py --coefficients OUT.json`, or the 'estimate'
section of a calibration document).

    python benchmarks/estimate/ship_defaults.py FAMILY FITTED.json "where it came from"
"""

import json
import pprint
import re
import sys
from pathlib import Path

SHIPPED = Path(__file__).resolve().parents[2] / "tensorforge" / "estimate" / "shipped.py"


def main(argv=None):
    family, path, source = (argv or sys.argv[1:])[:3]
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    coefficients = dict(data.get("coefficients", data))
    summary = (coefficients.get("fit") or {}).get("summary", {})
    coefficients.update(family=family, basis_kind="carried-over", fit={"summary": summary},
                        basis=f"shipped coefficients of {source}")
    text = SHIPPED.read_text(encoding="utf-8")
    body = pprint.pformat(coefficients, width=100, sort_dicts=True)
    entry = f'    "{family}": {body},\n'
    pattern = re.compile(rf'    "{re.escape(family)}": \{{.*?\n    \}},\n', re.S)
    if pattern.search(text):
        text = pattern.sub(lambda _: entry.replace("\n", "\n    ").rstrip(" ") , text, count=1)
    else:
        text = text.replace("SHIPPED = {\n", "SHIPPED = {\n" + entry.replace("\n", "\n    ").rstrip(" "), 1)
    SHIPPED.write_text(text, encoding="utf-8")
    print(f"wrote {family} into {SHIPPED}")


if __name__ == "__main__":
    main()
