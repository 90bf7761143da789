package reservation

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// untrustedFS lists filesystems whose hard links, link counts or flocks
// cannot be trusted for mutual exclusion, by statfs f_type.
var untrustedFS = map[int64]string{
	0x6969:     "nfs",
	0x517b:     "smb",
	0xfe534d42: "smb2",
	0xff534d42: "cifs",
	0x65735546: "fuse",
	0x01021997: "9p/v9fs",
	0x5346414f: "afs",
	0x6b414653: "kafs",
	0x00c36400: "ceph",
	0x73757245: "coda",
	0x564c:     "ncp",
	0x47504653: "gpfs",
	0x0bd00bd0: "lustre",
	0x013111a8: "ibrix",
	0x19830326: "fhgfs/beegfs",
	0xa501fcf5: "vxfs",
}

// checkLocalFS refuses a directory on a network or FUSE filesystem.
func checkLocalFS(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return err
	}
	return fsTypeError(int64(st.Type))
}

func fsTypeError(magic int64) error {
	if name, bad := untrustedFS[magic]; bad {
		return fmt.Errorf("it is on %s (statfs type %#x), whose links and locks cannot be trusted", name, magic)
	}
	return nil
}
