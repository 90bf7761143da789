package envvar

// ReservationTTL names the variable the majlis command reads for the
// expiry of reclaim reservations (provider.Options.ReservationTTL): a Go
// duration. Tests set it to seconds to exercise dead-owner recovery.
const ReservationTTL = "MAJLIS_RESERVATION_TTL"

// BackgroundPurge names the variable the majlis command reads to decide
// whether a reclaim starts, once its result is written, a detached
// `majlis gc --purge-due` for the kept trash that is due: "0" turns that
// off (tests do, so that no process outlives them); unset, empty or "1"
// leaves it on.
const BackgroundPurge = "MAJLIS_BACKGROUND_PURGE"

// EtcdTimeout names the variable the majlis command reads for the bound
// of each call to the coordination cluster (coordination.Options.Timeout):
// a Go duration. Tests lower it to see an unreachable cluster refused
// without waiting the default.
const EtcdTimeout = "MAJLIS_ETCD_TIMEOUT"

// MachineIDFile and BootIDFile name the variables the majlis command
// reads for the files that hold this host's machine id and boot id
// (procid.Source), in place of the system's: tests run several hosts of
// a coordination cluster on one machine with them.
const (
	MachineIDFile = "MAJLIS_MACHINE_ID_FILE"
	BootIDFile    = "MAJLIS_BOOT_ID_FILE"
)
