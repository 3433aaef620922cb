//! Which code applies at the job site: the NEC edition a state (or county or city) has adopted
//! on a date, the team's override, and the local amendments that go with it.
//!
//! The adoption table ships as data (`data/adoptions.csv`, sources in `data/sources.csv`);
//! every row names its sources and whether they agree. A project's [`Site`] (location, permit
//! date, override) and the table give its [`CodeInForce`]: the edition, why, and what Sparky
//! cannot check when its tables do not cover that edition.
//!
//! Layer: domain engine. Imports `nec` only; a project reaches it through [`Sited`], so it never
//! imports `project`, the store or the core.

pub mod adoption;
pub mod changes;
pub mod edition;
pub mod in_force;
pub mod show;
pub mod site;

pub use adoption::{adoptions, Adopted, Adoption, AdoptionError, Amendments, Source};
pub use edition::NecEdition;
pub use in_force::{code_in_force, for_project, today, Basis, CodeInForce, Sited};
pub use site::{Location, Site, SiteError};
