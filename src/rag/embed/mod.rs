pub trait X {}
