package press

import "container/list"

// lru is the node's memory cache of pages, bounded in entries. Not safe for
// concurrent use: Core owns it.
type lru struct {
	capacity int
	order    *list.List // front = most recently used; values are *entry
	byFile   map[uint32]*list.Element
}

type entry struct {
	file uint32
	data []byte
}

func newLRU(capacity int) *lru {
	return &lru{capacity: capacity, order: list.New(), byFile: make(map[uint32]*list.Element, capacity)}
}

// get returns the cached page and marks it used. The caller must not modify
// the returned slice.
func (c *lru) get(file uint32) ([]byte, bool) {
	e, ok := c.byFile[file]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*entry).data, true
}

func (c *lru) has(file uint32) bool { _, ok := c.byFile[file]; return ok }

// put caches data for file; it returns the file it evicted to make room, if
// any. Re-putting a cached file only refreshes it.
func (c *lru) put(file uint32, data []byte) (evicted uint32, didEvict bool) {
	if e, ok := c.byFile[file]; ok {
		e.Value.(*entry).data = data
		c.order.MoveToFront(e)
		return 0, false
	}
	if c.order.Len() >= c.capacity {
		last := c.order.Back()
		old := last.Value.(*entry)
		c.order.Remove(last)
		delete(c.byFile, old.file)
		evicted, didEvict = old.file, true
	}
	c.byFile[file] = c.order.PushFront(&entry{file: file, data: data})
	return evicted, didEvict
}

// files lists the cached files, most recently used first.
func (c *lru) files() []uint32 {
	out := make([]uint32, 0, c.order.Len())
	for e := c.order.Front(); e != nil; e = e.Next() {
		out = append(out, e.Value.(*entry).file)
	}
	return out
}

func (c *lru) len() int { return c.order.Len() }

// evictOldest drops the least recently used page; false when empty.
func (c *lru) evictOldest() (uint32, bool) {
	last := c.order.Back()
	if last == nil {
		return 0, false
	}
	old := last.Value.(*entry)
	c.order.Remove(last)
	delete(c.byFile, old.file)
	return old.file, true
}
