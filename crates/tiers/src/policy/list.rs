//! Doubly linked lists of tracks in one arena, indexed by id: the building
//! block of the LRU, ARC, S3-FIFO and W-TinyLFU queues. Up to four lists
//! share an arena; each node knows which list holds it.

use super::idmap::IdMap;

const NIL: u32 = u32::MAX;

#[derive(Debug, Clone, Copy)]
pub(crate) struct Node {
    pub id: u64,
    pub size: u64,
    prev: u32,
    next: u32,
    /// Which list holds the node.
    pub list: u8,
    /// A small per-policy counter (S3-FIFO's frequency).
    pub freq: u8,
}

#[derive(Debug, Clone, Copy)]
struct Head {
    head: u32,
    tail: u32,
    len: usize,
    bytes: u64,
}

impl Default for Head {
    fn default() -> Self {
        Head {
            head: NIL,
            tail: NIL,
            len: 0,
            bytes: 0,
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct Arena {
    nodes: Vec<Node>,
    free: Vec<u32>,
    map: IdMap<u32>,
    heads: [Head; 4],
}

impl Arena {
    pub fn find(&self, id: u64) -> Option<u32> {
        self.map.get(&id).copied()
    }

    pub fn node(&self, i: u32) -> &Node {
        &self.nodes[i as usize]
    }

    pub fn node_mut(&mut self, i: u32) -> &mut Node {
        &mut self.nodes[i as usize]
    }

    pub fn bytes(&self, list: u8) -> u64 {
        self.heads[list as usize].bytes
    }

    pub fn len(&self, list: u8) -> usize {
        self.heads[list as usize].len
    }

    /// The least recently inserted node of `list`.
    pub fn back(&self, list: u8) -> Option<u32> {
        let t = self.heads[list as usize].tail;
        (t != NIL).then_some(t)
    }

    /// The node in front of `i` in its list.
    pub fn prev(&self, i: u32) -> Option<u32> {
        let p = self.nodes[i as usize].prev;
        (p != NIL).then_some(p)
    }

    /// Ids of `list`, front to back.
    pub fn ids(&self, list: u8) -> Vec<u64> {
        let mut out = Vec::with_capacity(self.len(list));
        let mut i = self.heads[list as usize].head;
        while i != NIL {
            out.push(self.nodes[i as usize].id);
            i = self.nodes[i as usize].next;
        }
        out
    }

    /// Adds a new node at the front of `list`.
    pub fn insert_front(&mut self, id: u64, size: u64, list: u8) -> u32 {
        let node = Node {
            id,
            size,
            prev: NIL,
            next: NIL,
            list,
            freq: 0,
        };
        let i = match self.free.pop() {
            Some(i) => {
                self.nodes[i as usize] = node;
                i
            }
            None => {
                self.nodes.push(node);
                (self.nodes.len() - 1) as u32
            }
        };
        self.map.insert(id, i);
        self.link_front(i, list);
        i
    }

    /// Unlinks and frees node `i`; returns its id and size.
    pub fn remove(&mut self, i: u32) -> (u64, u64) {
        self.unlink(i);
        let n = self.nodes[i as usize];
        self.map.remove(&n.id);
        self.free.push(i);
        (n.id, n.size)
    }

    /// Moves node `i` to the front of `list` (possibly its own).
    pub fn move_front(&mut self, i: u32, list: u8) {
        self.unlink(i);
        self.link_front(i, list);
    }

    fn link_front(&mut self, i: u32, list: u8) {
        let h = &mut self.heads[list as usize];
        let old = h.head;
        h.head = i;
        if old == NIL {
            h.tail = i;
        }
        h.len += 1;
        h.bytes += self.nodes[i as usize].size;
        let n = &mut self.nodes[i as usize];
        n.prev = NIL;
        n.next = old;
        n.list = list;
        if old != NIL {
            self.nodes[old as usize].prev = i;
        }
    }

    fn unlink(&mut self, i: u32) {
        let Node {
            prev,
            next,
            list,
            size,
            ..
        } = self.nodes[i as usize];
        if prev != NIL {
            self.nodes[prev as usize].next = next;
        }
        if next != NIL {
            self.nodes[next as usize].prev = prev;
        }
        let h = &mut self.heads[list as usize];
        if h.head == i {
            h.head = next;
        }
        if h.tail == i {
            h.tail = prev;
        }
        h.len -= 1;
        h.bytes -= size;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_keep_order_and_byte_counts() {
        let mut a = Arena::default();
        let x = a.insert_front(1, 10, 0);
        a.insert_front(2, 20, 0);
        a.insert_front(3, 30, 1);
        assert_eq!(a.ids(0), vec![2, 1]);
        assert_eq!((a.bytes(0), a.bytes(1)), (30, 30));
        a.move_front(x, 1);
        assert_eq!(a.ids(0), vec![2]);
        assert_eq!(a.ids(1), vec![1, 3]);
        assert_eq!(a.back(1).map(|i| a.node(i).id), Some(3));
        let b = a.back(1).unwrap();
        assert_eq!(a.remove(b), (3, 30));
        assert_eq!(a.find(3), None);
        assert_eq!(a.bytes(1), 10);
        // The freed slot is reused.
        let y = a.insert_front(4, 5, 2);
        assert_eq!(y, b);
        assert_eq!(a.find(4), Some(b));
    }
}
