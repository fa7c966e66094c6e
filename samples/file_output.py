# Files written to a read-write mount come back in the result (path under the mount path, data
# in base64), so the model can hand the user a report without another tool.
# Run: codeact run --mount /tmp/x:/out samples/file_output.py
#      (at --isolation process add --env OUT_DIR=/tmp/x: that level shows host paths)
import csv
import json
import os
from pathlib import Path

# At the "process" isolation level the code sees the host directory, not the mount path, so the
# host says where it is; at the "namespaces" level the directory really is at /out.
out = Path(os.environ.get("OUT_DIR", "/out"))

sales = [("north", 120), ("south", 80), ("east", 95)]
with open(out / "report.csv", "w", newline="") as f:
    writer = csv.writer(f)
    writer.writerow(["region", "units"])
    writer.writerows(sales)

summary = {"regions": len(sales), "units": sum(units for _, units in sales)}
(out / "summary.json").write_text(json.dumps(summary))
print("wrote report.csv and summary.json")
summary
