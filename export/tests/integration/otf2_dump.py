"""Prints an OTF2 archive as JSON, read through the OTF2 library's own Python module (Debian's
python3-otf2, for /usr/bin/python3), for the export tests to check:

    {"clock": {"resolution", "offset", "length"},
     "locations": [{"ref", "name", "type", "events", "group", "group_type", "creator"}],
     "regions": [{"name", "description", "role", "paradigm"}],
     "events": [{"loc", "kind", "time", "region"?, "metric"?, "values"?, "mode"?, "attrs"?}]}

Enumerations are their OTF2 numbers (the module names some by an alias: location type 2,
ACCELERATOR_STREAM, reads as GPU). Events come in the reader's order (by time across locations,
each location's in its own order).
Usage: otf2_dump.py ARCHIVE/traces.otf2
"""
import json
import sys

import otf2


def plain(value):
    """An attribute value as JSON: numbers and strings as they are, definitions by name."""
    if isinstance(value, (int, float, str)):
        return value
    return getattr(value, "name", str(value))


def main(anchor):
    with otf2.reader.open(anchor) as trace:
        defs = trace.definitions
        clock = defs.clock_properties
        out = {
            "clock": {
                "resolution": clock.timer_resolution,
                "offset": clock.global_offset,
                "length": clock.trace_length,
            },
            "locations": [
                {
                    "ref": loc._ref,
                    "name": loc.name,
                    "type": loc.type.value,
                    "events": loc.number_of_events,
                    "group": loc.group.name,
                    "group_type": loc.group.location_group_type.value,
                    "creator": getattr(loc.group.creating_location_group, "name", None),
                }
                for loc in defs.locations
            ],
            "regions": [
                {
                    "name": r.name,
                    "description": r.description,
                    "role": r.region_role.value,
                    "paradigm": r.paradigm.value,
                }
                for r in defs.regions
            ],
            "events": [],
        }
        for loc, ev in trace.events:
            e = {"loc": loc._ref, "kind": type(ev).__name__, "time": ev.time}
            if isinstance(ev, (otf2.events.Enter, otf2.events.Leave)):
                e["region"] = ev.region.name
            elif isinstance(ev, otf2.events.Metric):
                e["metric"] = [m.name for m in ev.metric.members]
                e["values"] = list(ev.values)
            elif isinstance(ev, otf2.events.MeasurementOnOff):
                e["mode"] = ev.measurement_mode.value
            if ev.attributes:
                e["attrs"] = {a.name: plain(v) for a, v in ev.attributes.items()}
            out["events"].append(e)
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
