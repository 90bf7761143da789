package envvar

// ReservationTTL names the variable the majlis command reads for the
// expiry of reclaim reservations (provider.Options.ReservationTTL): a Go
// duration. Tests set it to seconds to exercise dead-owner recovery.
const ReservationTTL = "MAJLIS_RESERVATION_TTL"
