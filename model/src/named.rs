//! [`named_enum!`](crate::named_enum): an enum whose members each have a
//! name, declared as one list from which `ALL`, `COUNT`, `name` and
//! `from_name` follow. A list that needs every member (a report's rows, a
//! catalogue's checks) iterates `ALL`; a place that treats each member
//! matches exhaustively; so a new member is one line of the list, and the
//! compiler asks for it everywhere else.

/// Declares `pub enum $name { ... }` from `Member = "name"` lines, with
/// `COUNT`, `ALL` (in the list's order), `name()`, `from_name()` and
/// `index()` (its place in `ALL`).
///
/// ```
/// idemsim_model::named_enum! {
///     /// A colour.
///     #[derive(Clone, Copy, Debug, PartialEq)]
///     pub enum Colour {
///         /// Red.
///         Red = "red",
///         /// Green.
///         Green = "green",
///     }
/// }
/// assert_eq!(Colour::ALL, [Colour::Red, Colour::Green]);
/// assert_eq!(Colour::from_name("green"), Some(Colour::Green));
/// assert_eq!((Colour::COUNT, Colour::Green.index()), (2, 1));
/// ```
#[macro_export]
macro_rules! named_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $($(#[$vmeta:meta])* $member:ident = $text:literal),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        pub enum $name {
            $($(#[$vmeta])* $member),+
        }

        impl $name {
            /// How many there are.
            pub const COUNT: usize = [$($text),+].len();

            /// Every one, in the order of the list.
            pub const ALL: [$name; $name::COUNT] = [$($name::$member),+];

            /// Its name, as reports, files and the command line write it.
            pub fn name(self) -> &'static str {
                match self {
                    $($name::$member => $text),+
                }
            }

            /// Parses a name.
            pub fn from_name(name: &str) -> Option<$name> {
                $name::ALL.into_iter().find(|m| m.name() == name)
            }

            /// Its place in `ALL`.
            pub fn index(self) -> usize {
                self as usize
            }
        }
    };
}
