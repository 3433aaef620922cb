#!/usr/bin/env python3
"""Writes eval/answers.json, the conversation set of `sparky eval answers` (docs/eval.md).

Every expected figure is worked out here from the NEC method named in the turn's `method`
note and the published table values below; nothing here runs Sparky's own code. Run from the
repository root: python3 eval/answers.py
"""
import json
import math
import pathlib

# NEC Chapter 9 Table 8: uncoated copper / aluminum, ohm per 1000 ft at 75 C, and area (cmil).
R_CU = {"14": 3.07, "12": 1.93, "10": 1.21, "8": 0.764, "6": 0.491, "4": 0.308, "3": 0.245,
        "2": 0.194, "1": 0.154, "1/0": 0.122, "2/0": 0.0967, "3/0": 0.0766, "4/0": 0.0608}
R_AL = {"12": 3.18, "10": 2.00, "8": 1.26, "6": 0.808, "4": 0.508, "2": 0.319, "1/0": 0.201,
        "2/0": 0.159, "3/0": 0.126, "4/0": 0.100}
# NEC Table 310.16, 75 C column.
A75_CU = {"14": 20, "12": 25, "10": 35, "8": 50, "6": 65, "4": 85, "3": 100, "2": 115, "1": 130,
          "1/0": 150, "2/0": 175, "3/0": 200, "4/0": 230, "250": 255, "350": 310, "500": 380}
A75_AL = {"10": 30, "8": 40, "6": 50, "4": 65, "3": 75, "2": 90, "1": 100, "1/0": 120,
          "2/0": 135, "3/0": 155, "4/0": 180, "250": 205, "350": 250, "500": 310}
A60_CU = {"14": 15, "12": 20, "10": 30, "8": 40, "6": 55, "4": 70, "3": 85, "2": 95, "1": 110}
A90_CU = {"14": 25, "12": 30, "10": 40, "8": 55, "6": 75, "4": 95, "3": 115, "2": 130, "1": 145,
          "1/0": 170, "2/0": 195, "3/0": 225, "4/0": 260}
# NEC Table 430.250 (three-phase, 230 V and 460 V) and Table 430.248 (single-phase, 230 V).
FLC3_230 = {3: 9.6, 5: 15.2, 7.5: 22, 10: 28, 15: 42, 20: 54, 25: 68, 30: 80}
FLC3_460 = {3: 4.8, 5: 7.6, 7.5: 11, 10: 14, 15: 21, 20: 27, 25: 34, 30: 40, 40: 52, 50: 65}
FLC1_230 = {1: 8, 1.5: 10, 2: 12, 3: 17, 5: 28, 7.5: 40}
# NEC Table 250.66 (copper GEC by largest copper ungrounded conductor).
GEC = [("2", "8"), ("1", "6"), ("1/0", "6"), ("2/0", "4"), ("3/0", "4"), ("4/0", "2"),
       ("250", "2"), ("350", "2"), ("500", "1/0")]
# NEC Table 220.42(A) (2023), VA per square foot.
UNIT_LOAD = {"office": 1.3, "warehouse": 0.25, "retail": 1.9, "school": 1.5, "restaurant": 1.5,
             "hospital": 1.6, "hotel": 1.7}

CONVS = []


def conv(cid, category, *turns):
    CONVS.append({"id": cid, "category": category, "turns": list(turns)})


def say(text, tools=None, numbers=(), citations=(), card=None, mentions=(), method="", resolved=None):
    expect = {}
    if tools is not None:
        expect["tools"] = []
        for t in tools:
            e = {"name": t[0], "args": t[1]}
            if len(t) > 2:
                e["call"] = t[2]
            if len(t) > 3 and t[3]:
                e["or"] = list(t[3])
            expect["tools"].append(e)
    if numbers:
        expect["numbers"] = [{"value": round(v, 3), "tol": t, "what": w} for v, t, w in numbers]
    if citations:
        expect["citations"] = list(citations)
    if card is not None:
        expect["card"] = card
    if mentions:
        expect["mentions_any"] = list(mentions)
    if resolved:
        expect["resolved"] = resolved
    t = {"say": text, "expect": expect}
    if method:
        t["method"] = method
    return t


def confirm(resolved="executed"):
    return {"confirm": None, "expect": {"resolved": resolved, "card": False}}


def cancel():
    return {"cancel": None, "expect": {"resolved": "cancelled", "card": False}}


def vd(size, amps, feet, volts, phase, material="copper"):
    r = (R_CU if material == "copper" else R_AL)[size]
    k = 2 if phase == 1 else math.sqrt(3)
    drop = k * amps * r * feet / 1000
    return drop, 100 * drop / volts, (
        f"VD = {'2' if phase == 1 else '1.732'} x {amps} A x {r} ohm/kft (Ch. 9 Table 8, {size} {material}) "
        f"x {feet} ft / 1000 = {drop:.2f} V = {100 * drop / volts:.2f} % of {volts} V")


# --- voltage drop -----------------------------------------------------------------------
VD_CASES = [
    ("whats the vd on 12 awg cu, 16 amps, 100 ft one way, 120v single phase", "12", 16, 100, 120, 1),
    ("voltage drop 10awg copper 120 volt 1ph 20a load 150 feet?", "10", 20, 150, 120, 1),
    ("vd check: #8 cu 240v single phase 40 amps run is 175'", "8", 40, 175, 240, 1),
    ("6 awg copper, 240 v 1 phase, 50 amp, 120 ft - whats my drop", "6", 50, 120, 240, 1),
    ("3ph 208v 4 awg cu 50 amps 200 feet voltage drop pls", "4", 50, 200, 208, 3),
    ("480 3 phase, 1/0 copper, 100 amps, 300 ft. drop?", "1/0", 100, 300, 480, 3),
    ("how much drop on 2 awg cu 3 phase 208 volts 90a 250 ft", "2", 90, 250, 208, 3),
    ("14 ga copper 120v single ph 12 amps 80 ft vd", "14", 12, 80, 120, 1),
    ("voltage drop for 3/0 cu, 240 volt single phase, 150 amp, 90 feet", "3/0", 150, 90, 240, 1),
    ("4/0 copper 480v three phase 180 amps 400ft how bad is the drop", "4/0", 180, 400, 480, 3),
    ("aluminum 2 awg 240v 1ph 80 amps 140 ft voltage drop", "2", 80, 140, 240, 1, "aluminum"),
    ("al 4/0, 3 phase 208, 150 a, 220 feet. vd?", "4/0", 150, 220, 208, 3, "aluminum"),
]
for i, case in enumerate(VD_CASES, 1):
    text, size, amps, feet, volts, phase = case[:6]
    material = case[6] if len(case) > 6 else "copper"
    drop, pct, method = vd(size, amps, feet, volts, phase, material)
    args = {"size": size, "current": amps, "length": feet, "voltage": volts, "phase": phase}
    if material == "aluminum":
        args["material"] = "aluminum"
    conv(f"vd-{i:02d}", "calculation", say(
        text, tools=[("calculate_voltage_drop", args)],
        numbers=[(drop, max(0.05, drop * 0.02), "volts dropped"), (pct, 0.1, "percent drop")],
        method=method))

# --- ampacity (Table 310.16) --------------------------------------------------------------
AMP_CASES = [
    ("ampacity of 3 awg thhn copper at 75c?", "3", "copper", "75", A75_CU),
    ("what does 1/0 cu carry in the 75 deg column", "1/0", "copper", "75", A75_CU),
    ("310.16 ampacity 4/0 aluminum 75C", "4/0", "aluminum", "75", A75_AL),
    ("whats 6 awg copper good for at 60 degree", "6", "copper", "60", A60_CU),
    ("8 awg cu 90c ampacity from the table", "8", "copper", "90", A90_CU),
    ("how many amps is 350 kcmil copper thwn rated at 75", "350", "copper", "75", A75_CU),
    ("2/0 al ampacity at 75 celcius", "2/0", "aluminum", "75", A75_AL),
    ("ampacity for #1 copper 90 degree column?", "1", "copper", "90", A90_CU),
]
for i, (text, size, material, col, table) in enumerate(AMP_CASES, 1):
    conv(f"amp-{i:02d}", "calculation", say(
        text, tools=[("lookup_table", {"table": "310.16", "row": size, "material": material})],
        numbers=[(table[size], 0, "ampacity A")], citations=["310.16"],
        method=f"NEC Table 310.16, {size} {material}, {col} C column: {table[size]} A"))

# --- motors ---------------------------------------------------------------------------------
MOTOR_CASES = [
    ("10 hp 230v 3 phase motor, what size wire and breaker", 10, 230, 3, FLC3_230),
    ("sizing branch ckt for 5hp 460v 3ph motor", 5, 460, 3, FLC3_460),
    ("20 horse 460 volt three phase motor conductors?", 20, 460, 3, FLC3_460),
    ("7.5 hp, 230v, 3ph - min conductor ampacity", 7.5, 230, 3, FLC3_230),
    ("single phase 5 hp 230 volt compressor motor branch circuit", 5, 230, 1, FLC1_230),
    ("3 hp 1ph 230v motor flc and wire size", 3, 230, 1, FLC1_230),
    ("30hp 460 3 phase pump motor. flc? min ampacity?", 30, 460, 3, FLC3_460),
]
for i, (text, hp, volts, phase, table) in enumerate(MOTOR_CASES, 1):
    flc = table[hp]
    conv(f"motor-{i:02d}", "calculation", say(
        text, tools=[("size_motor_circuit", {"hp": hp, "voltage": volts, "phase": phase})],
        numbers=[(flc, 0.05, "table FLC A"), (1.25 * flc, 0.05, "125 % FLC, min conductor ampacity")],
        citations=["430.22"],
        method=f"FLC from Table {'430.250' if phase == 3 else '430.248'}: {flc} A; 430.22: 1.25 x {flc} = {1.25 * flc:.2f} A"))

FEEDER_CASES = [
    ("feeder for two motors at 460 3ph: 10hp and 5hp. min ampacity?", [(10, 460), (5, 460)]),
    ("mcc feeder: 20 hp + 15 hp + 7.5 hp all 460v three phase, what ampacity", [(20, 460), (15, 460), (7.5, 460)]),
    ("two 10hp motors 230v 3ph on one feeder, conductor ampacity needed", [(10, 230), (10, 230)]),
]
for i, (text, motors) in enumerate(FEEDER_CASES, 1):
    flcs = [(FLC3_460 if v == 460 else FLC3_230)[hp] for hp, v in motors]
    need = 1.25 * max(flcs) + sum(flcs) - max(flcs)
    conv(f"mfeeder-{i:02d}", "calculation", say(
        text, tools=[("size_motor_feeder", {}, {"motors": [{"hp": hp, "voltage": v, "phase": 3} for hp, v in motors]})],
        numbers=[(need, 0.05, "feeder min ampacity A")], citations=["430.24"],
        method=f"430.24: 125 % of the largest FLC {max(flcs)} + the others {sum(flcs) - max(flcs)} = {need:.2f} A (FLC from Table 430.250)"))

# --- grounding electrode conductor --------------------------------------------------------
GEC_CASES = [
    ("gec size for 3/0 cu service conductors", "3/0"),
    ("what size grounding electrode conductor w/ 4/0 copper service", "4/0"),
    ("service is 1/0 copper, GEC?", "1/0"),
    ("500 kcmil cu service entrance, grounding electrode conductor size", "500"),
]
for i, (text, size) in enumerate(GEC_CASES, 1):
    gec = dict(GEC)[size]
    conv(f"gec-{i:02d}", "calculation", say(
        text, tools=[("size_grounding_electrode_conductor", {"size": size})],
        citations=["250.66"], mentions=[gec + " awg", gec + " cu", gec + " copper", "#" + gec],
        method=f"Table 250.66: largest ungrounded {size} Cu -> {gec} AWG copper GEC"))

# --- general lighting (Table 220.42(A)) ------------------------------------------------------
LIGHT_CASES = [
    ("general lighting load for a 10,000 sq ft office", "office", 10000),
    ("5000 square foot retail store lighting load va", "retail", 5000),
    ("warehouse 40000 sqft general lighting load?", "warehouse", 40000),
    ("school 25k sq ft, unit lighting load calc", "school", 25000),
]
for i, (text, occ, area) in enumerate(LIGHT_CASES, 1):
    va = UNIT_LOAD[occ] * area
    conv(f"light-{i:02d}", "calculation", say(
        text, tools=[("calculate_general_lighting_load", {"occupancy": occ, "area_ft2": area})],
        numbers=[(va, 1, "connected VA")], citations=["220.42"],
        method=f"Table 220.42(A) (2023): {occ} {UNIT_LOAD[occ]} VA/ft2 x {area} = {va:.0f} VA"))

# --- dwelling standard method --------------------------------------------------------------
for i, area in enumerate([2000, 1500, 2800], 1):
    gl = 3 * area + 2 * 1500 + 1500
    demand = 3000 + 0.35 * (gl - 3000)
    text = [f"dwelling load calc {area} sq ft, no appliances yet, standard method",
            f"standard calc for a {area} sf house, just lighting + small appl + laundry",
            f"{area} square foot home basic load calc amps at 240"][i - 1]
    conv(f"dwell-{i:02d}", "calculation", say(
        text, tools=[("calculate_dwelling_load", {"floor_area_ft2": area})],
        numbers=[(demand, 1, "demand VA"), (demand / 240, 0.1, "amps at 240 V")], citations=["220.42"],
        method=f"220.41 3 VA/ft2 x {area} + 2 x 1500 small appliance + 1500 laundry = {gl} VA; Table 220.45: 3000 at 100 % + {gl - 3000} at 35 % = {demand:.0f} VA; / 240 V = {demand / 240:.2f} A"))

# --- transformer fault current ---------------------------------------------------------------
SC_CASES = [
    ("available fault current 45kva xfmr 208v 3ph 3.5% z", 45, 208, 3.5),
    ("75 kva transformer, 208Y/120 secondary, 5.75 %Z - fault current at the secondary?", 75, 208, 5.75),
    ("short circuit at a 112.5kva 480v 3 phase transformer z=4.5%", 112.5, 480, 4.5),
]
for i, (text, kva, volts, z) in enumerate(SC_CASES, 1):
    fla = kva * 1000 / (math.sqrt(3) * volts)
    isc = fla * 100 / z
    conv(f"sc-{i:02d}", "calculation", say(
        text, tools=[("calculate_short_circuit", {"kva": kva, "voltage": volts, "impedance_percent": z})],
        numbers=[(isc / 1000, 0.05, "available fault kA")],
        method=f"I_FLA = {kva} kVA x 1000 / (1.732 x {volts}) = {fla:.1f} A; I_SC = I_FLA x 100 / {z} = {isc:.0f} A (infinite primary)"))

# --- conductor sizing check ----------------------------------------------------------------
for i, (text, amps, size) in enumerate([
        ("is 10 awg cu ok for a 24 amp continuous load on a 30a breaker", 24, "10"),
        ("check 8 awg copper for 36a continuous, 50 amp ocpd", 36, "8")], 1):
    conv(f"cond-{i:02d}", "calculation", say(
        text, tools=[("check_conductor_sizing", {"size": size, "continuous_load": amps})],
        numbers=[(1.25 * amps, 0.05, "125 % of the continuous load")], citations=["210.19"],
        method=f"210.19(A)(1): 1.25 x {amps} A = {1.25 * amps} A required ampacity"))

# --- calculator, arc flash, service upgrade -------------------------------------------------
conv("calc-01", "calculation", say("quick math: 3 x 1500 va heaters on 240, amps?",
                                   tools=[("calculator", {}, {"expression": "3*1500/240"})], numbers=[(18.75, 0.01, "amps")],
                                   method="3 x 1500 / 240 = 18.75 A"))
conv("calc-02", "calculation", say("whats 9600 watts / 240 volts",
                                   tools=[("calculator", {}, {"expression": "9600/240"})], numbers=[(40, 0.01, "amps")],
                                   method="9600 / 240 = 40 A"))
conv("arc-01", "calculation", say(
    "incident energy at LP-1, 480v? bolted fault 20 ka, clearing 50 ms, 18 inch working distance",
    tools=[("calculate_arc_flash", {"bolted_fault_ka": 20, "clearing_time_ms": 50}, {"voltage": 480, "working_distance_mm": 457, "equipment": "panelboard600v"})],
    method="IEEE 1584 inputs as given; the grade checks the call only"))
conv("svc-01", "calculation", say(
    "can my 200a service take a 48a ev charger? house is 2400 sq ft",
    tools=[("check_service_upgrade", {"service_rating": 200}, {"floor_area_ft2": 2400, "added_loads": [{"description": "EV charger", "va": 11520}]})],
    method="220.87/220.83 check by the tool; the grade checks the call only"))

# --- PV on a busbar (705.12), existing load from demand (220.87), multifamily (220.84) -------
inv_a = 7600 / 240
conv("pv-01", "calculation", say(
    "can i backfeed a 7.6kw inverter into LP-1? breaker at the bottom, opposite the main",
    tools=[("check_pv_interconnection", {"panel": "LP-1"},
            {"panel": "LP-1", "inverters": [{"kw": 7.6}], "pv_breaker_position": "opposite_end"})],
    numbers=[(inv_a, 0.05, "inverter output A"), (40, 0, "PV breaker A")], citations=["705.12"],
    method=f"LP-1: 200 A bus, 200 A main. 7600 W / 240 V = {inv_a:.2f} A; x 1.25 = {1.25 * inv_a:.1f} A -> 40 A breaker; "
           "120 % rule (705.12(B)(2), 2023): 200 + 39.6 <= 240"))
conv("pv-02", "calculation", say(
    "whats the biggest solar breaker i can put on a 225a bus w/ a 200a main, 120% rule",
    tools=[("check_pv_interconnection", {"busbar_rating": 225, "main_breaker": 200})],
    numbers=[(70, 0, "max PV breaker A"), (56, 0.05, "max inverter output A")], citations=["705.12"],
    method="225 x 1.2 = 270 A; 270 - 200 = 70 A; 70 / 1.25 = 56 A inverter output"))
peaks = [6.2, 5.9, 5.1, 4.8, 6.0, 8.4, 9.6, 9.1, 7.0, 5.0, 5.5, 6.3]
ex_a = max(peaks) * 1000 / 240
conv("demand-01", "calculation", say(
    "12 months of utility bills, peak kw by month: " + " ".join(str(x) for x in peaks)
    + ". 100a 240v service, can it take a 7680 va ev charger?",
    tools=[("calculate_existing_dwelling_load_from_demand", {"service_rating": 100},
            {"monthly_peaks": peaks, "service_rating": 100, "voltage": 240,
             "new_loads": [{"description": "EV charger", "va": 7680}]})],
    numbers=[(1.25 * ex_a, 0.1, "existing x 125 % A"), (1.25 * ex_a + 7680 / 240, 0.1, "total A")],
    citations=["220.87"],
    method=f"220.87: highest month 9.6 kW / 240 V = {ex_a:.1f} A; x 1.25 = {1.25 * ex_a:.1f} A; + 7680 / 240 = 32 A -> {1.25 * ex_a + 32:.1f} A <= 100 A"))
conv("demand-02", "calculation", say(
    "30 day load study, meter data peak was 62 amps on the 200a service. adding a 48a charger (11520 va), ok?",
    tools=[("calculate_existing_dwelling_load_from_demand", {"recorded_peak": 62, "recorded_days": 30},
            {"recorded_peak": 62, "recorded_days": 30, "demand_unit": "a", "service_rating": 200,
             "new_loads": [{"description": "EV charger", "va": 11520}]})],
    numbers=[(62 * 1.25, 0.1, "existing x 125 % A"), (62 * 1.25 + 48, 0.1, "total A")],
    citations=["220.87"],
    method="220.87 exception: 62 A x 1.25 = 77.5 A; + 11520 / 240 = 48 A -> 125.5 A <= 200 A"))
mf_unit = 840 * 3 + 2 * 1500 + 8000 + 6000 + 2500
conv("mf-01", "calculation", say(
    "20 unit apartment building, 840 sqft each, 8kw range, 6kw electric heat, 2.5kw water heater, "
    "common laundry. optional method service size at 120/240?",
    tools=[("calculate_multifamily_load", {},
            {"units": [{"count": 20, "floor_area_ft2": 840, "laundry_circuits": 0, "cooking_kw": [8],
                        "appliances": [{"description": "water heater", "va": 2500}], "heating_va": 6000}],
             "voltage": 240, "phase": 1})],
    numbers=[(mf_unit * 20 * 0.38, 1, "optional method VA"), (mf_unit * 20 * 0.38 / 240, 0.1, "amps")],
    citations=["220.84"],
    method=f"220.84(C): {mf_unit} VA per unit x 20 = {mf_unit * 20} VA; Table 220.84, 20 units 38 % = {mf_unit * 20 * 0.38:.0f} VA; / 240 = {mf_unit * 20 * 0.38 / 240:.1f} A (Annex D4(b))"))
gl = 10 * (1000 * 3 + 3000 + 1500)
gl_d = 3000 + 0.35 * (gl - 3000)
wh = 10 * 4500 * 0.75
conv("mf-02", "calculation", say(
    "standard calc for 10 apartments, 1000 sq ft each, gas cooking, no electric heat, each has a 4.5kw water heater",
    tools=[("calculate_multifamily_load", {},
            {"units": [{"count": 10, "floor_area_ft2": 1000,
                        "appliances": [{"description": "water heater", "va": 4500}]}]})],
    numbers=[(gl_d + wh, 1, "standard method VA"), ((gl_d + wh) / 240, 0.1, "amps")],
    citations=["220.53"],
    method=f"{gl} VA lighting, small-appliance and laundry: 3000 + 35 % of the rest = {gl_d:.0f} VA; 220.53: 10 x 4500 x 75 % = {wh:.0f} VA; "
           f"total {gl_d + wh:.0f} VA / 240 = {(gl_d + wh) / 240:.1f} A; optional method not permitted (no electric cooking, heat or AC)"))

# --- code questions ---------------------------------------------------------------------------
# A question the GFCI/AFCI tool answers as well as a code search (either is a right choice).
PROTECTION = {"do garage receptacles need gfci", "afci required in bedrooms?"}
CODE = [
    ("do garage receptacles need gfci", "210.8"),
    ("afci required in bedrooms?", "210.12"),
    ("working space depth in front of a 240v panel", "110.26"),
    ("bathroom receptacle circuit has to be 20a right? which section", "210.11"),
    ("tamper resistant outlets required where", "406.12"),
    ("single ground rod 25 ohm rule", "250.53"),
    ("kitchen countertop receptacle spacing rule", "210.52"),
    ("box fill calc for a 4x4 box, where is that in the code", "314.16"),
    ("pool equipotential bonding requirements", "680.26"),
    ("burial depth for uf cable under a lawn", "300.5"),
    ("small conductor rule 14 awg max breaker", "240.4"),
    ("equipment grounding conductor size table", "250.122"),
    ("ev charger continuous load 125 percent which article", "625"),
    ("neutral and ground separated in a subpanel? cite it", "250.24"),
]
for i, (text, section) in enumerate(CODE, 1):
    also = ["check_gfci_afci"] if text in PROTECTION else []
    conv(f"code-{i:02d}", "code", say(text, tools=[("search_code", {}, {"query": text}, also)], citations=[section],
                                     method=f"answered by {section}"))

# --- project read tools -----------------------------------------------------------------------
READ = [
    ("whats in LP-1", "describe_panel", {"panel": "LP-1"}),
    ("show me the panel schedule for lp-1", "describe_panel", {"panel": "LP-1"}),
    ("which breaker is the dryer on", "find_circuits", {"query": "dryer"}),
    ("find the compressor circuit in lp1", "find_circuits", {"query": "compressor"}),
    ("is LP-1 overloaded? check capacity", "check_panel_capacity", {"panel": "LP-1"}),
    ("run an inspection on LP-1", "run_inspection", {"panel": "LP-1"}),
    ("any code problems in this project? inspect it", "run_inspection", {}),
    ("daily energy budget for the job", "energy_budget", {}),
    ("send me the LP-1 panel schedule as a pdf", "send_report", {"document": "panel_schedule", "panel": "LP-1"}),
    ("what nec edition is in force in washington state", "code_in_force", {"state": "WA"}),
    ("which code cycle does oregon use", "code_in_force", {"state": "OR"}),
    ("what time is it", "current_time", {}),
    ("whats on the todo list", "list_tasks", {}),
]
for i, (text, tool, args) in enumerate(READ, 1):
    conv(f"read-{i:02d}", "project", say(text, tools=[(tool, args)], card=False,
                                        method="a read tool on the seed project; the grade checks the call"))

# --- writes, each confirmed -----------------------------------------------------------------
WRITES = [
    ("add a 20 amp circuit for the garage door opener in LP-1", "add_circuit", {"panel": "LP-1", "breaker": 20}, {"description": "Garage door opener", "load_va": 600}),
    ("new 2 pole 40a ckt on lp-1 for a ev charger", "add_circuit", {"panel": "LP-1", "breaker": 40, "poles": 2}, {"description": "EV charger", "load_va": 7680}),
    ("put a 15a lighting circuit for the porch lights in panel LP-1", "add_circuit", {"panel": "LP-1", "breaker": 15}, {"description": "Porch lights", "load_va": 300}),
    ("change the dryer breaker to 25 amps", "update_circuit", {"changes": {"breaker": 25}}, {"panel": "LP-1", "find": "dryer"}),
    ("bump the kitchen receptacles wire to 10 awg", "update_circuit", {"changes": {"conductor_size": "10"}}, {"panel": "LP-1", "find": "kitchen"}),
    ("remove the shop compressor circuit", "remove_circuit", {}, {"panel": "LP-1", "find": "compressor"}),
    ("take out circuit 6 on LP-1", "remove_circuit", {"panel": "LP-1", "number": 6}),
    ("add a subpanel LP-2, 240v single phase, 100a bus, fed from LP-1", "add_panel", {"name": "LP-2", "voltage": 240, "phase": 1, "bus_rating": 100}, {"fed_from": "LP-1"}),
    ("add panel DP-1 480v 3ph 400 amp bus", "add_panel", {"name": "DP-1", "voltage": 480, "phase": 3, "bus_rating": 400}),
    ("add a feeder F-2 from LP-1 to T-1, 3 awg cu, 100a breaker", "add_feeder", {"name": "F-2", "conductor_size": "3", "ocpd": 100}, {"from": "LP-1", "to": "T-1", "material": "copper", "insulation": 75, "sets": 1}),
    ("add a 75 kva xfmr T-2 480 to 208 3 phase 5.75%z", "add_transformer", {"name": "T-2", "kva": 75, "primary_voltage": 480, "secondary_voltage": 208, "phase": 3}, {"impedance_percent": 5.75}),
    ("set the service to 400 amps 240v single phase", "set_service", {"rating": 400, "voltage": 240, "phase": 1}),
    ("add a load: fridge 150 watts 24 hrs a day, 40 percent duty", "add_load_item", {"name": "fridge", "watts": 150, "hours_per_day": 24}, {"duty_cycle": 0.4}),
    ("add 400w of solar, 5 sun hours, 85% efficient", "add_charging_source", {"watts": 400, "hours_per_day": 5}, {"name": "solar", "kind": "solar", "efficiency": 0.85}),
    ("make a task for mike: label all breakers in LP-1", "create_task", {}, {"title": "label all breakers in LP-1", "assignee": "mike"}),
]
for i, (text, tool, args, *call) in enumerate(WRITES, 1):
    conv(f"write-{i:02d}", "write", say(text, tools=[(tool, args, *call)], card=True,
                                       method="a change: proposed on a card, then confirmed"), confirm())

conv("write-16", "write",
     say("add a task to order breakers", tools=[("create_task", {}, {"title": "order breakers"})], card=True), cancel())
conv("write-17", "write",
     say("whats open on the task list?", tools=[("list_tasks", {})], card=False),
     say("mark the label task done", tools=[("complete_task", {}, {"task_id": 1})], card=True,
         method="the task id is the one list_tasks gave in the turn before"))

# --- corrections of a pending card --------------------------------------------------------------
CORR = [
    ("add a 20a circuit for the microwave on LP-1", {"breaker": 20}, "actually make that 30 amps", {"breaker": 30}, 1500),
    ("add a 15 amp ckt for bathroom fan in lp-1", {"breaker": 15}, "no wait, 20a, its a heater fan", {"breaker": 20}, 1200),
    ("new circuit on LP-1: dishwasher 20 amp", {"breaker": 20}, "sorry, dishwasher is 15a", {"breaker": 15}, 1200),
    ("add a 2 pole 30a for the mini split on LP-1", {"breaker": 30, "poles": 2}, "make it 25 amp 2 pole", {"breaker": 25, "poles": 2}, 3600),
]
for i, (first, a1, fix, a2, va) in enumerate(CORR, 1):
    conv(f"fix-{i:02d}", "correction",
         say(first, tools=[("add_circuit", {"panel": "LP-1", **a1}, {"description": first, "load_va": va})], card=True),
         say(fix, tools=[("add_circuit", {"panel": "LP-1", **a2}, {"description": first, "load_va": va})], card=True,
             method="a typed correction replaces the pending card with a corrected one"),
         confirm())

# --- follow-ups ---------------------------------------------------------------------------------
FOLLOW = [
    (("vd on 12 awg copper 120v single phase 16a 150 ft", "12", 16, 150, 120, 1),
     ("what if i upsize to 10 awg", "10", 16, 150, 120, 1)),
    (("208 3 phase, 6 awg cu, 55 amps, 180 ft voltage drop", "6", 55, 180, 208, 3),
     ("and with 4 awg?", "4", 55, 180, 208, 3)),
    (("drop on 8 awg cu 240 1ph 35 amps 200 feet", "8", 35, 200, 240, 1),
     ("same thing but 120 feet", "8", 35, 120, 240, 1)),
]
for i, turns in enumerate(FOLLOW, 1):
    out = []
    for text, size, amps, feet, volts, phase in turns:
        drop, pct, method = vd(size, amps, feet, volts, phase)
        out.append(say(text, tools=[("calculate_voltage_drop", {"size": size, "current": amps, "length": feet}, {"voltage": volts, "phase": phase})],
                       numbers=[(drop, max(0.05, drop * 0.02), "volts dropped"), (pct, 0.1, "percent")],
                       method=method))
    conv(f"follow-{i:02d}", "follow-up", *out)

FOLLOW_AMP = [
    (("ampacity 4 awg cu 75c", "4", "copper", A75_CU), ("same size in aluminum?", "4", "aluminum", A75_AL)),
    (("2 awg copper ampacity, 75 degree", "2", "copper", A75_CU), ("what about 1/0 copper", "1/0", "copper", A75_CU)),
]
for i, turns in enumerate(FOLLOW_AMP, 4):
    out = []
    for text, size, material, table in turns:
        out.append(say(text, tools=[("lookup_table", {"table": "310.16", "row": size, "material": material})],
                       numbers=[(table[size], 0, "ampacity A")],
                       method=f"Table 310.16 75 C: {size} {material} {table[size]} A"))
    conv(f"follow-{i:02d}", "follow-up", *out)

conv("follow-06", "follow-up",
     say("10hp 460v 3ph motor flc", tools=[("size_motor_circuit", {"hp": 10, "voltage": 460, "phase": 3})],
         numbers=[(14, 0.05, "FLC A")], method="Table 430.250: 10 hp 460 V 14 A"),
     say("and whats the min conductor ampacity for it", numbers=[(17.5, 0.05, "125 % FLC")],
         method="430.22: 1.25 x 14 = 17.5 A"))
conv("follow-07", "follow-up",
     say("which breaker feeds the range", tools=[("find_circuits", {"query": "range"})]),
     say("is the wire on it big enough? check it", tools=[("check_conductor_sizing", {}, {"panel": "LP-1", "number": 2})], card=False))

# --- GFCI/AFCI, outlets per circuit, EV circuits ---------------------------------------------
conv("gfci-01", "calculation", say(
    "does the fridge receptacle in a kitchen need gfci on a 2023 job? its not on the counter",
    tools=[("check_gfci_afci", {"location": "kitchen_other"}, {"location": "kitchen_other", "edition": 2023})],
    citations=["210.8(A)(6)"], mentions=["yes", "required"],
    method="2023 210.8(A)(6) covers all dwelling kitchen receptacles (2020 covered countertop receptacles only)"))
conv("gfci-02", "calculation", say(
    "arc fault needed for bedroom receptacles, 2020 code?",
    tools=[("check_gfci_afci", {"location": "bedroom"}, {"location": "bedroom", "edition": 2020})],
    citations=["210.12"], mentions=["afci", "arc"],
    method="2020 210.12(A) lists bedrooms for 120 V 15/20 A branch circuits"))
conv("outlets-01", "calculation", say(
    "how many receptacles can i put on a 20 amp 120v circuit in an office",
    tools=[("count_outlets_per_circuit", {"breaker": 20}, {"outlet": "receptacle", "voltage": 120, "breaker": 20})],
    numbers=[(13, 0, "receptacles")], citations=["220.14(I)"],
    method="120 V x 20 A = 2400 VA; 2400 / 180 VA per yoke = 13.3, so 13 (220.14(I))"))
conv("outlets-02", "calculation", say(
    "how many outlets on a 15a circuit commercial",
    tools=[("count_outlets_per_circuit", {"breaker": 15}, {"outlet": "receptacle", "voltage": 120, "breaker": 15})],
    numbers=[(10, 0, "receptacles")], citations=["220.14(I)"],
    method="120 V x 15 A = 1800 VA; 1800 / 180 = 10"))
conv("ev-01", "calculation", say(
    "48 amp tesla wall connector, 240v. breaker and wire?",
    tools=[("size_ev_circuit", {"amps": 48}, {"amps": 48, "voltage": 240})],
    numbers=[(60, 0, "breaker A")], citations=["625.41"],
    method="625.41: 48 A x 1.25 = 60 A; 60 A breaker; 6 AWG Cu at 75 C terminations (65 A)"))
conv("ev-02", "calculation", say(
    "level 2 car charger 32 amps, what size breaker",
    tools=[("size_ev_circuit", {"amps": 32}, {"amps": 32, "voltage": 240})],
    numbers=[(40, 0, "breaker A")], citations=["625.41"],
    method="32 A x 1.25 = 40 A: 40 A breaker"))

# --- box fill (314.16) and raceway fill (Chapter 9) ----------------------------------------------
# Written as whole conversations; each turn's `method` gives the working from Table 314.16(A)/(B)
# and Chapter 9 Tables 1, 4 and 5.
CONVS.extend(
[{'id': 'box-01',
  'category': 'calculation',
  'turns': [{'say': 'box fill check - 4 square 1 1/2 deep, two 12/2 w/ground romex, one duplex '
                    'recep, box has clamps',
             'expect': {'tools': [{'name': 'calculate_box_fill',
                                   'args': {'box': 'square_4x1-1/2'},
                                   'call': {'conductors': [{'size': '12', 'count': 4}],
                                            'egcs': [{'size': '12', 'count': 2}],
                                            'internal_clamps': True,
                                            'devices': [{'description': 'duplex receptacle',
                                                         'largest_conductor': '12'}]}}],
                        'numbers': [{'value': 18.0, 'tol': 0.01, 'what': 'required in3'},
                                    {'value': 21.0, 'tol': 0.01, 'what': 'box in3'}],
                        'citations': ['314.16']},
             'method': '314.16(B): 4 x 2.25 + clamps 2.25 + yoke 2 x 2.25 + EGCs 2.25 = 18.00 in3 '
                       '<= 21.0 in3 (Table 314.16(A) 4 x 1-1/2 square): passes'}]},
 {'id': 'box-02',
  'category': 'calculation',
  'turns': [{'say': 'what size round box do i need for 2 12-2 romex w/ grd, fixture stud, 2 '
                    'clamps, 2 pigtails and 2 #18 fixture wires',
             'expect': {'tools': [{'name': 'calculate_box_fill',
                                   'args': {'support_fittings': 1, 'internal_clamps': True},
                                   'call': {'conductors': [{'size': '12', 'count': 4},
                                                           {'size': '12',
                                                            'count': 2,
                                                            'run': 'internal'}],
                                            'egcs': [{'size': '12', 'count': 2}],
                                            'fixture_wires': [{'size': '18', 'count': 2}]}}],
                        'numbers': [{'value': 18.75, 'tol': 0.01, 'what': 'required in3'},
                                    {'value': 21.5,
                                     'tol': 0.01,
                                     'what': '4 x 2-1/8 round box in3'}],
                        'citations': ['314.16']},
             'method': 'Stallcup example: 4 x 2.25 + EGC 2.25 + stud 2.25 + clamps 2.25 + pigtails '
                       '0 + 2 x 1.5 = 18.75 in3 -> 4 x 2-1/8 round/octagonal (21.5 in3)'}]},
 {'id': 'box-03',
  'category': 'calculation',
  'turns': [{'say': "2020 code - 4 hots #12 spliced plus 6 #12 grounds in a 4sq 2 1/8 deep, what's "
                    'the box fill',
             'expect': {'tools': [{'name': 'calculate_box_fill',
                                   'args': {'box': 'square_4x2-1/8', 'edition': '2020'},
                                   'call': {'conductors': [{'size': '12', 'count': 4}],
                                            'egcs': [{'size': '12', 'count': 6}]}}],
                        'numbers': [{'value': 12.375, 'tol': 0.01, 'what': 'required in3'},
                                    {'value': 30.3, 'tol': 0.01, 'what': 'box in3'}],
                        'citations': ['314.16']},
             'method': '2020 314.16(B)(5): 4 x 2.25 + EGCs 2.25 for four + 2 x 1/4 x 2.25 = 12.375 '
                       'in3 <= 30.3 in3'}]},
 {'id': 'raceway-01',
  'category': 'calculation',
  'turns': [{'say': 'conduit fill for 4 #10 thhn and a #10 thhn ground in 3/4 emt',
             'expect': {'tools': [{'name': 'calculate_raceway_fill',
                                   'args': {'raceway': 'emt', 'trade_size': '3/4'},
                                   'call': {'conductors': [{'count': 4,
                                                            'size': '10',
                                                            'insulation': 'THHN'},
                                                           {'count': 1,
                                                            'size': '10',
                                                            'insulation': 'THHN'}]}}],
                        'numbers': [{'value': 0.1055, 'tol': 0.0005, 'what': 'conductor area in2'},
                                    {'value': 0.213, 'tol': 0.0005, 'what': 'allowed at 40 % in2'}],
                        'citations': ['Chapter 9']},
             'method': 'Table 5: 5 x 0.0211 = 0.1055 in2; Table 4 3/4 EMT 0.533 in2 x 40 % = 0.213 '
                       'in2: passes (19.79 %)'}]},
 {'id': 'raceway-02',
  'category': 'calculation',
  'turns': [{'say': 'how many #12 thhn can i pull in 1 inch emt',
             'expect': {'tools': [{'name': 'calculate_raceway_fill',
                                   'args': {'raceway': 'emt', 'trade_size': '1'},
                                   'call': {'conductors': [{'count': 1,
                                                            'size': '12',
                                                            'insulation': 'THHN'}]}}],
                        'numbers': [{'value': 26,
                                     'tol': 0,
                                     'what': 'max 12 AWG THHN in 1 in. EMT'}],
                        'citations': ['Chapter 9']},
             'method': 'Table 4: 1 in. EMT 0.864 x 40 % = 0.346 in2; / 0.0133 = 26.0 -> 26 (Note '
                       '7; Annex C Table C.1)'}]},
 {'id': 'raceway-03',
  'category': 'calculation',
  'turns': [{'say': 'what size rigid nipple for three 3/0 thhn, one #1 thhn and one #6 thhn',
             'expect': {'tools': [{'name': 'calculate_raceway_fill',
                                   'args': {'raceway': 'rmc', 'nipple': True},
                                   'call': {'conductors': [{'count': 3,
                                                            'size': '3/0',
                                                            'insulation': 'THHN'},
                                                           {'count': 1,
                                                            'size': '1',
                                                            'insulation': 'THHN'},
                                                           {'count': 1,
                                                            'size': '6',
                                                            'insulation': 'THHN'}]}}],
                        'numbers': [{'value': 1.0106, 'tol': 0.0005, 'what': 'conductor area in2'},
                                    {'value': 1.243,
                                     'tol': 0.0005,
                                     'what': '1-1/2 RMC at 60 % in2'}],
                        'citations': ['Chapter 9']},
             'method': 'EC&M Code Calculations example 2: 0.8037 + 0.1562 + 0.0507 = 1.0106 in2; '
                       'Note 4 nipple 60 %: 1-1/2 RMC 2.071 x 0.6 = 1.243 in2'}]}]
)

# --- out of scope -------------------------------------------------------------------------------
REFUSE = [
    "whos gonna win the game tonight",
    "write me a poem about my dog",
    "best pizza place near me?",
    "can u do my taxes",
    "how do i change the brake pads on a 2015 f150",
    "translate 'good morning' to spanish",
    "whats bitcoin at rn",
    "tell me a joke about plumbers",
]
for i, text in enumerate(REFUSE, 1):
    conv(f"off-{i:02d}", "refusal", say(text, tools=[], card=False,
                                       mentions=["electrical", "nec", "code", "electric"],
                                       method="out of scope: no tool, and the answer says what Sparky is for"))

pathlib.Path(__file__).with_name("answers.json").write_text(
    json.dumps({"conversations": CONVS}, indent=1) + "\n", encoding="utf-8")
turns = sum(len(c["turns"]) for c in CONVS)
print(f"{len(CONVS)} conversations, {turns} turns")
