package lockcore

import "strings"

// SlotCount is the number of Redis Cluster hash slots.
const SlotCount = 16384

// HashTag returns the part of key that Redis Cluster hashes: the bytes
// between the first '{' and the first '}' after it when that is non-empty,
// else the whole key (Redis Cluster specification, "Hash tags").
func HashTag(key string) string {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return key
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return key
	}
	return key[open+1 : open+1+end]
}

// Slot returns the cluster hash slot of key: CRC16 (XMODEM) of its hash tag
// mod 16384 (Redis Cluster specification).
func Slot(key string) int {
	return int(crc16([]byte(HashTag(key))) % SlotCount)
}

// crc16 is CRC-16/XMODEM (poly 0x1021, init 0), the variant Redis Cluster uses.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
