//! Benchmark of `run_inspection` on a generated project of 50 panels and 2,000 circuits:
//! the inspection itself over in-memory project data, and the load (SQLite) + inspect path a
//! tool call takes. Prints the median of several runs.
//!
//! Run with `cargo bench --bench inspection`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use sparky::nec::units::{
    Amps, ConductorSize, Edition, Feet, Material, Phase, TempRating, VoltAmperes, Volts,
};
use sparky::project::inspection::{inspect, InspectOptions};
use sparky::project::{
    Circuit, CircuitSpec, Feeder, FeederSpec, Panel, PanelSpec, Project, ProjectData, ServiceSpec,
};
use sparky::store::{SqliteStore, Store};

const PANELS: usize = 50;
const CIRCUITS_PER_PANEL: usize = 40;

fn service() -> ServiceSpec {
    ServiceSpec {
        voltage: Volts(208.0),
        phase: Phase::Three,
        rating: Amps(2000.0),
        available_fault_ka: Some(35.0),
        notes: String::new(),
    }
}

fn panel(i: usize) -> PanelSpec {
    PanelSpec {
        name: format!("P{i:02}"),
        voltage: Volts(208.0),
        phase: Phase::Three,
        bus_rating: Amps(225.0),
        main_breaker: (!i.is_multiple_of(3)).then_some(Amps(200.0)),
        interrupting_rating_ka: match i % 4 {
            0 => None,
            1 => Some(10.0),
            2 => Some(22.0),
            _ => Some(65.0),
        },
        // Ten panels on the service, the rest one level down.
        fed_from: Some(if i <= 10 {
            "service".into()
        } else {
            format!("P{:02}", (i - 1) % 10 + 1)
        }),
        spaces: 84,
        location: String::new(),
    }
}

fn feeder(i: usize) -> FeederSpec {
    let p = panel(i);
    FeederSpec {
        name: format!("F{i:02}"),
        from: p.fed_from.unwrap_or_default(),
        to: p.name,
        conductor_size: ConductorSize::Awg(-2),
        material: Material::Copper,
        insulation: TempRating::C75,
        sets: 1,
        length: (!i.is_multiple_of(5)).then_some(Feet(20.0 + i as f64 * 3.0)),
        ocpd: Amps(200.0),
        raceway: None,
        egc_size: None,
        c_value: None,
        impedance_ohms_per_1000ft: None,
    }
}

/// Circuits of one panel: mostly fine, with some seeded problems and missing data.
fn circuits(i: usize) -> Vec<CircuitSpec> {
    let mut out = Vec::new();
    let mut slot = 1;
    for k in 0..CIRCUITS_PER_PANEL {
        let poles: u8 = match k % 10 {
            7 | 8 => 2,
            9 if k % 20 == 9 => 3,
            _ => 1,
        };
        let (va, breaker, size) = match poles {
            1 => (800.0 + (k as f64 * 37.0) % 1000.0, 20.0, "12"),
            2 => (4000.0, 30.0, "10"),
            _ => (9000.0, 40.0, "8"),
        };
        // Every 13th circuit: 12 AWG on 30 A; every 17th: no size; every 11th: no length.
        let (breaker, size) = if (i + k).is_multiple_of(13) && poles == 1 {
            (30.0, Some("12"))
        } else if (i + k).is_multiple_of(17) {
            (breaker, None)
        } else {
            (breaker, Some(size))
        };
        out.push(CircuitSpec {
            number: slot,
            poles,
            description: format!("load {k} of panel {i}"),
            load_va: VoltAmperes(va),
            continuous: k % 4 == 0,
            breaker: Amps(breaker),
            conductor_size: size.and_then(|s| s.parse().ok()),
            material: Material::Copper,
            insulation: TempRating::C75,
            length: (!(i + k).is_multiple_of(11))
                .then_some(Feet(25.0 + ((i * 7 + k * 13) % 150) as f64)),
            conduit: if k % 2 == 0 {
                "3/4 EMT".into()
            } else {
                "3/4 PVC, #12 EGC".into()
            },
            motor: None,
            appliance: None,
        });
        slot += 2 * i32::from(poles);
        if slot > 84 {
            slot = 2;
        }
    }
    out
}

fn in_memory() -> ProjectData {
    let mut p = ProjectData {
        project: Project {
            id: 1,
            workspace: sparky::project::Workspace::local(),
            name: "bench".into(),
            edition: Edition::Nec2023,
            confirm_policy: None,
            created_at: Utc::now(),
            site: Default::default(),
        },
        service: Some(service()),
        panels: Vec::new(),
        circuits: Vec::new(),
        feeders: Vec::new(),
        transformers: Vec::new(),
        loads: Vec::new(),
        charging_sources: Vec::new(),
        tasks: Vec::new(),
    };
    let mut cid = 1;
    for i in 1..=PANELS {
        let id = i as i64;
        p.panels.push(Panel {
            id,
            project_id: 1,
            spec: panel(i),
        });
        p.feeders.push(Feeder {
            id,
            project_id: 1,
            spec: feeder(i),
        });
        for c in circuits(i) {
            p.circuits.push(Circuit {
                id: cid,
                panel_id: id,
                spec: c,
            });
            cid += 1;
        }
    }
    p
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

fn main() {
    let data = in_memory();
    assert_eq!(data.panels.len(), PANELS);
    assert_eq!(data.circuits.len(), PANELS * CIRCUITS_PER_PANEL);
    let opts = InspectOptions::default();

    // Warm up (table parsing happens once).
    let report = match inspect(&data, &opts) {
        Ok(r) => r,
        Err(e) => panic!("inspection failed: {e}"),
    };
    let runs = 31;
    let times: Vec<Duration> = (0..runs)
        .map(|_| {
            let t = Instant::now();
            let r = inspect(&data, &opts);
            let d = t.elapsed();
            std::hint::black_box(r.map(|r| r.findings.len()).unwrap_or(0));
            d
        })
        .collect();
    println!(
        "inspection (in memory), {} panels / {} circuits: median {} over {runs} runs (min {}, max {}); {} findings ({} violations, {} warnings, {} info)",
        data.panels.len(),
        data.circuits.len(),
        ms(median(times.clone())),
        ms(*times.iter().min().unwrap_or(&Duration::ZERO)),
        ms(*times.iter().max().unwrap_or(&Duration::ZERO)),
        report.findings.len(),
        report.counts.violations,
        report.counts.warnings,
        report.counts.info
    );

    let rt = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => panic!("tokio: {e}"),
    };
    rt.block_on(async {
        let dir = tempfile::tempdir().expect("temp dir");
        let store: Arc<dyn Store> = Arc::new(
            SqliteStore::open(&dir.path().join("bench.db"))
                .await
                .expect("sqlite"),
        );
        let t = Instant::now();
        let p = store
            .create_project(
                &sparky::project::Workspace::local(),
                "bench",
                Edition::Nec2023,
            )
            .await
            .expect("project");
        store.set_service(p.id, &service()).await.expect("service");
        for i in 1..=PANELS {
            let panel_row = store.add_panel(p.id, &panel(i)).await.expect("panel");
            for c in circuits(i) {
                store.add_circuit(panel_row.id, &c).await.expect("circuit");
            }
        }
        for i in 1..=PANELS {
            store.add_feeder(p.id, &feeder(i)).await.expect("feeder");
        }
        println!("(seeding SQLite took {})", ms(t.elapsed()));
        let runs = 11;
        let mut load = Vec::new();
        let mut total = Vec::new();
        for _ in 0..runs {
            let t = Instant::now();
            let data = store.load_project(p.id).await.expect("load");
            let l = t.elapsed();
            let r = inspect(&data, &opts);
            total.push(t.elapsed());
            load.push(l);
            std::hint::black_box(r.map(|r| r.findings.len()).unwrap_or(0));
        }
        println!(
            "load (SQLite) + inspection: median {} over {runs} runs (load alone median {})",
            ms(median(total)),
            ms(median(load))
        );
    });
}
