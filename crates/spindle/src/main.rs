fn main() {
    println!("spindle: not built yet");
}
