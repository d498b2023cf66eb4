"""Write the estimate's shipped coefficients for one architecture family into
tensorforge/estimate/shipped.py, from a fitted calibration (`rescore.py --coefficients OUT.json`,
or the 'estimate' section of a calibration document). The other families' entries are kept.

    python benchmarks/estimate/ship_defaults.py FAMILY FITTED.json "where it came from"
"""

import json
import sys
from pathlib import Path

SHIPPED = Path(__file__).resolve().parents[2] / "tensorforge" / "estimate" / "shipped.py"
DATA = SHIPPED.with_name("shipped.json")


def main(argv=None):
    family, path, source = (argv or sys.argv[1:])[:3]
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    coefficients = dict(data.get("coefficients", data))
    summary = (coefficients.get("fit") or {}).get("summary", {})
    coefficients.update(
        family=family, basis_kind="carried-over", fit={"summary": summary}, basis=f"shipped coefficients of {source}"
    )
    table = json.loads(DATA.read_text(encoding="utf-8")) if DATA.exists() else {}
    table[family] = coefficients
    DATA.write_text(json.dumps(table, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {family} into {DATA}")


if __name__ == "__main__":
    main()
