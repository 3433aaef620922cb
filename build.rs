//! Rebuilds when a migration is added: the store embeds the migrations at compile time.
fn main() {
    println!("cargo:rerun-if-changed=migrations");
}
